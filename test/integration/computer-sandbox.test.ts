import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BwrapBackend } from '../../src/computer/backend/bwrap/backend.js';
import { findDescendantByInnerPid } from '../../src/computer/backend/bwrap/proc.js';
import { ComputerManager } from '../../src/computer/manager.js';
import { computerSchema } from '../../src/config/computer-schema.js';
import { isPaddockError } from '../../src/shared/errors.js';
import { silentLogger } from '../../src/shared/logger.js';
import { pollUntil } from '../helpers/poll.js';
import { launchRunning, runUntilExit, withComputer } from '../unit/computer/fixture.js';

const run = runUntilExit;

describe('computer sandbox (bwrap)', { concurrency: false }, () => {
  it('runs commands as the non-root agent account with its home in /workspace', async () => {
    await withComputer({}, async ({ manager }) => {
      await launchRunning(manager);
      const r = await run(manager, 'id -u; id -un; echo "$HOME"; pwd; grep CapEff /proc/self/status');
      assert.equal(r.exitCode, 0, r.stderr);
      const [uid, name, home, cwd, caps] = r.stdout.trim().split('\n');
      assert.equal(uid, '1000');
      assert.equal(name, 'agent');
      assert.equal(home, '/workspace');
      assert.equal(cwd, '/workspace');
      assert.match(caps ?? '', /CapEff:\s+0+$/);
    });
  });

  it('never runs as host root: every process of the computer has an unprivileged host uid', async (t) => {
    if (process.getuid?.() !== 0) {
      t.skip('only a server running as root could map the guest to host root');
      return;
    }
    await withComputer({}, async ({ manager }) => {
      await launchRunning(manager);
      // a marker of this test alone: other tests may be booting computers at the same moment
      const marker = `30.${process.pid}${Date.now() % 1000}`;
      const r = await run(
        manager,
        `sleep ${marker} & cat /proc/slabinfo >/dev/null 2>&1 && echo slabinfo-readable || echo slabinfo-denied`,
      );
      assert.equal(r.stdout.trim(), 'slabinfo-denied', 'root-only /proc files stay unreadable');
      // from the host: the job's sleep and every process of its sandbox (the sandbox's own,
      // the guest agent, the job's) run as the sandbox uid. The sandbox is the sleep's oldest
      // ancestor below this test; its descendants are the computer's processes.
      const procs = new Map<string, { ppid: string; uid: number; cmd: string }>();
      for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
        try {
          const text = readFileSync(`/proc/${pid}/status`, 'utf8');
          procs.set(pid, {
            ppid: /^PPid:\s+(\d+)/m.exec(text)?.[1] ?? '0',
            uid: Number(/^Uid:\s+(\d+)/m.exec(text)?.[1]),
            cmd: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\u0000').join(' ').trim(),
          });
        } catch {
          // gone meanwhile
        }
      }
      const sleeper = [...procs].find(([, p]) => p.cmd === `sleep ${marker}`)?.[0];
      assert.ok(sleeper, `found the job's sleep ${marker} on the host`);
      let sandbox = sleeper;
      while (procs.get(sandbox)?.ppid !== String(process.pid)) {
        const parent = procs.get(sandbox)?.ppid;
        assert.ok(parent && procs.has(parent), `the sleep descends from this test's sandbox (${sandbox})`);
        sandbox = parent;
      }
      const inSandbox = (pid: string): boolean => {
        for (let p: string | undefined = pid; p && p !== '0'; p = procs.get(p)?.ppid)
          if (p === sandbox) return true;
        return false;
      };
      const mine = [...procs].filter(([pid]) => inSandbox(pid));
      const shown = mine.map(([pid, p]) => `${pid} uid ${p.uid}: ${p.cmd.slice(0, 80)}`).join('\n');
      assert.ok(
        // node's own options (Node 24 adds --disable-sigusr1) may stand between it and the script
        mine.some(([, p]) =>
          /^\/opt\/paddock\/bin\/node( --\S+)* \/opt\/paddock\/guest\/agent\.js/.test(p.cmd),
        ),
        `the guest agent is among the computer's processes:\n${shown}`,
      );
      assert.ok(
        mine.every(([, p]) => p.uid !== 0),
        `a process of the computer runs as host root:\n${shown}`,
      );
    });
  });

  it('refuses the calls that would let one process of the computer take over another (ptrace, pidfd_getfd, process_vm_readv)', async () => {
    await withComputer({}, async ({ manager }) => {
      await launchRunning(manager);
      // before each call errno is reset; an allowed call would fail differently (EBADF, ESRCH) or succeed
      const r = await run(
        manager,
        `python3 -c "
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
names = {'x64': {'ptrace': 101, 'pidfd_getfd': 438, 'process_vm_readv': 310}, 'arm64': {'ptrace': 117, 'pidfd_getfd': 438, 'process_vm_readv': 270}}
table = names['arm64' if os.uname().machine == 'aarch64' else 'x64']
for name, nr in table.items():
    ctypes.set_errno(0)
    r = libc.syscall(nr, 0, 0, 0, 0, 0, 0)
    print(name, r, ctypes.get_errno())
"`,
      );
      assert.equal(r.exitCode, 0, r.stderr);
      for (const name of ['ptrace', 'pidfd_getfd', 'process_vm_readv']) {
        assert.match(r.stdout, new RegExp(`^${name} -1 1$`, 'm'), `${name} must answer EPERM:\n${r.stdout}`);
      }
    });
  });

  it('shows no host process and none of the host home directories, /root, /run, secrets or the data directory', async () => {
    await withComputer({}, async ({ manager, dataDir }) => {
      const c = await launchRunning(manager);
      const script = [
        'ls /proc | grep -E "^[0-9]+$" | wc -l',
        `for p in /home /root /run /etc/shadow /var/run/docker.sock ${dataDir} ${process.cwd()}; do test -e "$p" && echo "present $p"; done`,
        `test -e /proc/${process.pid}/cmdline && cat /proc/${process.pid}/cmdline | tr '\\0' ' '`,
        'echo end',
      ].join('; ');
      const r = await run(manager, script);
      const lines = r.stdout.trim().split('\n');
      assert.ok(Number(lines[0]) < 10, `the guest sees ${lines[0]} processes: ${r.stdout}`);
      assert.deepEqual(lines.slice(1), ['end'], r.stdout);
      assert.ok(
        existsSync(join(c.hostWorkspace)),
        'the workspace lives on the host under the data directory',
      );
    });
  });

  it('has only loopback: curl and a Python socket to 1.1.1.1 fail', async () => {
    await withComputer({}, async ({ manager }) => {
      await launchRunning(manager);
      const r = await run(
        manager,
        [
          'curl -sS --max-time 5 http://1.1.1.1/ >/dev/null 2>&1; echo "curl=$?"',
          `python3 -c "import socket; s=socket.socket(); s.settimeout(5); s.connect(('1.1.1.1', 80))" 2>/dev/null; echo "python=$?"`,
          "awk 'NR>2 {print $1}' /proc/net/dev | tr -d ':' | sort | tr '\\n' ' '",
        ].join('; '),
      );
      assert.match(r.stdout, /curl=[1-9]/);
      assert.match(r.stdout, /python=1/);
      assert.equal(r.stdout.trim().split('\n').at(-1)?.trim(), 'lo');
    });
  });

  it('cannot gain privileges: no capabilities, no new privileges and no new user namespaces', async () => {
    await withComputer({}, async ({ manager }) => {
      await launchRunning(manager);
      const r = await run(
        manager,
        'grep -E "^(CapEff|CapPrm|CapAmb|NoNewPrivs)" /proc/self/status; unshare -U true 2>/dev/null; echo "unshare=$?"; python3 -c "import os; os.unshare(0x10000000)" 2>/dev/null; echo "py=$?"',
      );
      for (const field of ['CapEff', 'CapPrm', 'CapAmb'])
        assert.match(r.stdout, new RegExp(`${field}:\\s+0+\\n`));
      assert.match(r.stdout, /NoNewPrivs:\s+1\n/);
      assert.match(r.stdout, /unshare=[1-9]/);
      assert.match(r.stdout, /py=[1-9]/);
    });
  });

  it('refuses to launch a profile that asks for the egress proxy when the server runs none', async () => {
    const profile = { id: 'web', name: 'Web', networkMode: 'proxy' };
    await withComputer({ computer: { profiles: [profile] } }, async ({ manager }) => {
      assert.throws(
        () => manager.launch('web'),
        (e: unknown) =>
          isPaddockError(e) && e.code === 'UNSUPPORTED_CAPABILITY' && /egress proxy/.test(e.message),
      );
      assert.equal(manager.status().lifecycle, 'none');
    });
  });

  it('puts the computer in error when the guest agent dies and fails pending calls at once', async () => {
    await withComputer({}, async ({ manager }) => {
      const c = await launchRunning(manager);
      const agent = findDescendantByInnerPid(c.instance!.hostPid, c.hello!.pid, 4);
      assert.ok(agent, 'the agent is visible from the host');
      process.kill(agent, 'SIGSTOP');
      const pending = c.call('ping', {});
      const outcome = pending.then(
        () => 'answered',
        (e: unknown) => (isPaddockError(e) ? e.code : String(e)),
      );
      process.kill(agent, 'SIGKILL');
      assert.equal(await outcome, 'NOT_RUNNING');
      await pollUntil(() => manager.status().lifecycle === 'error', 'lifecycle error', 5000);
      assert.match(manager.status().bootError ?? '', /guest agent exited/);
      await assert.rejects(
        manager.runCommand({ script: 'true', waitMs: 100, timeoutMs: 1000 }),
        (e: unknown) => isPaddockError(e) && e.code === 'NOT_RUNNING',
      );
    });
  });

  it('reports a boot error when the guest agent cannot start', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-computer-'));
    const logger = silentLogger();
    const manager = new ComputerManager({
      backend: new BwrapBackend({ logger, guestDir: join(dataDir, 'missing') }),
      config: computerSchema.parse({}),
      dataDir,
      dockUrl: 'http://127.0.0.1:7331',
      logger,
    });
    try {
      manager.launch('shell');
      await manager.computer!.booted;
      const status = manager.status();
      assert.equal(status.lifecycle, 'error');
      assert.match(status.bootError ?? '', /guest agent is missing.*npm run build/);
      const errors = manager.log.read({ limit: 50, level: 'err' }).entries;
      assert.ok(errors.some((e) => e.event === 'computer.error'));
    } finally {
      await manager.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('gives every generation a fresh workspace on the host and removes the replaced one', async () => {
    await withComputer({}, async ({ manager }) => {
      const first = await launchRunning(manager);
      await run(manager, 'echo hello > note.txt');
      assert.equal(readFileSync(join(first.hostWorkspace, 'note.txt'), 'utf8'), 'hello\n');
      const second = await launchRunning(manager);
      assert.equal(second.generation, first.generation + 1);
      assert.equal(existsSync(first.hostWorkspace), false);
      const r = await run(manager, 'ls -A /workspace | wc -l');
      assert.equal(r.stdout.trim(), '0');
    });
  });
});
