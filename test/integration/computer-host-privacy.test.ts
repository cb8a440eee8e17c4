/**
 * Another local account reads nothing of a computer (Paddock as root): while computers run with
 * a workspace file, a /tmp file, a staged root-only profile mount, a root-only skill and staged
 * runtime files, an unprivileged uid (65534, through setpriv) tries every path the host has of
 * them — everything under the data directory and the server's sandbox roots, the computers'
 * disks and loop devices, /proc/<pid>/root, cwd, fd and environ of every sandbox process, and
 * the server's socket — and must fail on each. The enumeration is done as root, so no path is
 * missed for not being listable.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BwrapBackend, defaultGuestDir } from '../../src/computer/backend/bwrap/backend.js';
import { diskImageSupport, loopDevices } from '../../src/computer/backend/bwrap/disk-image.js';
import { ComputerService } from '../../src/computer/service.js';
import { computerSchema } from '../../src/config/computer-schema.js';
import { silentLogger } from '../../src/shared/logger.js';
import { connectHttp } from '../helpers/clients.js';
import { startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';
import { hostDescendants, launchRunning, runUntilExit } from '../unit/computer/fixture.js';

const NOBODY = 65_534;
const SECRETS = {
  mount: 'MOUNT-SECRET-8d1f',
  skill: 'SKILL-SECRET-27ac',
  workspace: 'WORKSPACE-SECRET-c3b9',
  tmp: 'TMP-SECRET-5e02',
};
const isRoot = process.getuid?.() === 0;

/**
 * What an unprivileged uid manages with each path: list a directory, read a file or a device,
 * connect to a socket, open a FIFO. Returns the successes.
 */
function attack(paths: string[]): { what: string; path: string; sample?: string }[] {
  const script = `
import json, os, socket, stat, sys
got = []
for p in json.load(sys.stdin):
    try:
        st = os.stat(p)
    except OSError:
        continue
    try:
        if stat.S_ISDIR(st.st_mode):
            got.append({"what": "list", "path": p, "sample": " ".join(os.listdir(p)[:8])})
        elif stat.S_ISSOCK(st.st_mode):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(2)
            s.connect(p)
            s.close()
            got.append({"what": "connect", "path": p})
        elif stat.S_ISFIFO(st.st_mode):
            os.close(os.open(p, os.O_RDONLY | os.O_NONBLOCK))
            got.append({"what": "open-fifo", "path": p})
        else:
            with open(p, "rb") as f:
                got.append({"what": "read", "path": p, "sample": f.read(64).decode("latin1")})
    except OSError:
        pass
print(json.dumps(got))
`;
  const r = spawnSync(
    '/usr/bin/setpriv',
    [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', '/usr/bin/python3', '-c', script],
    { input: JSON.stringify(paths), encoding: 'utf8', cwd: '/', timeout: 120_000 },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as { what: string; path: string; sample?: string }[];
}

/** Every path below `dir` (itself included), as root sees them, without following links. */
function walk(dir: string, out: string[] = []): string[] {
  out.push(dir);
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(dir);
  } catch {
    return out;
  }
  if (!st.isDirectory()) return out;
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) walk(join(dir, name), out);
  return out;
}

/** The server's sandbox roots in the temp directory (`paddock-sandboxes-<pid>-*`). */
function sandboxRoots(serverPid: number): string[] {
  return readdirSync(tmpdir())
    .filter((n) => n.startsWith(`paddock-sandboxes-${serverPid}-`))
    .map((n) => join(tmpdir(), n));
}

/**
 * Every path an attacker could try: the data directory and sandbox roots as root walks them,
 * each sandbox process's root, cwd, fd and environ (and, through the outermost one's root, the
 * launch directory with the disks and staged files mounted in it), and the disks' loop devices.
 */
function targets(dataDir: string, serverPid: number): string[] {
  const paths: string[] = [];
  walk(dataDir, paths);
  for (const root of sandboxRoots(serverPid)) {
    walk(root, paths);
    for (const pid of hostDescendants(serverPid)) {
      paths.push(`/proc/${pid}/root`, `/proc/${pid}/cwd`, `/proc/${pid}/fd`, `/proc/${pid}/environ`);
      paths.push(`/proc/${pid}/root/workspace`, `/proc/${pid}/cwd/secret.txt`, `/proc/${pid}/fd/0`);
      // the launch namespace's view: disks and staged mounts on the launch directories
      walk(`/proc/${pid}/root${join(root, 'anchor')}`, paths);
    }
  }
  for (const d of loopDevices()) if (d.file.startsWith(`${dataDir}/`)) paths.push(d.device);
  return [...new Set(paths)];
}

/** A directory only root can enter, holding a root-only file (mode 0600) with `secret`. */
function rootOnly(parent: string, name: string, file: string, secret: string): string {
  const dir = join(parent, name);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, file), `${secret}\n`, { mode: 0o600 });
  return dir;
}

describe('what other local accounts can read of the computers (Paddock as root)', {
  skip: isRoot ? false : 'only a server running as root gives computers uids of their own',
}, () => {
  it('an unprivileged uid reads, lists and connects to nothing of a running computer, its disk, staged mount, skill or the staged runtime files', async () => {
    const root = mkdtempSync(join(tmpdir(), 'paddock-privacy-'));
    // an operator's open directories around the data directory: Paddock closes its own parts
    chmodSync(root, 0o755);
    const dataDir = join(root, 'data');
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    const hidden = mkdtempSync(join(tmpdir(), 'paddock-privacy-src-'));
    const mount = rootOnly(hidden, 'mount', 'secret.txt', SECRETS.mount);
    const skills = join(hidden, 'skills');
    rootOnly(skills, 'demo', 'SKILL.md', SECRETS.skill);
    chmodSync(skills, 0o700);
    // a guest agent the sandbox uid cannot reach where it is: it is staged as a runtime file
    const guestDir = join(hidden, 'guest');
    cpSync(defaultGuestDir(), guestDir, { recursive: true });
    const service = new ComputerService({
      backend: new BwrapBackend({ logger: silentLogger(), guestDir }),
      config: computerSchema.parse({
        autoLaunch: false,
        profiles: [
          {
            id: 'secret',
            name: 'Secret',
            requires: ['bash'],
            limits: { diskMb: 64 },
            mounts: [{ source: mount, target: '/secret', readOnly: true }],
          },
        ],
        named: { kept: { workspace: 'keep' } },
      }),
      dataDir,
      dockUrl: 'http://127.0.0.1:7331',
      logger: silentLogger(),
      sharedMounts: [{ source: skills, target: '/skills', readOnly: true }],
    });
    try {
      for (const key of ['private:one', 'named:kept']) {
        const m = service.byKey(key);
        await launchRunning(m, 'secret');
        const r = await runUntilExit(
          m,
          `echo ${SECRETS.workspace} > /workspace/secret.txt; echo ${SECRETS.tmp} > /tmp/secret.txt; mkfifo /tmp/fifo; (cd /workspace && sleep 600 >/dev/null 2>&1 &); cat /secret/secret.txt /skills/demo/SKILL.md`,
        );
        // the computer itself reads its mount and its skill, root-only as they are on the host
        assert.equal(r.stdout, `${SECRETS.mount}\n${SECRETS.skill}\n`, r.stderr);
      }
      const paths = targets(dataDir, process.pid);
      assert.ok(
        paths.some((p) => /\/anchor\/[^/]+\/disk\/workspace\/secret\.txt$/.test(p)),
        `root sees the workspace file through the sandbox, so the attacker tries it: ${paths.length} paths`,
      );
      assert.ok(
        paths.some((p) => p.includes('/runtime/guest/')),
        'the guest agent was staged',
      );
      assert.ok(
        paths.some((p) => /\/anchor\/[^/]+\/mounts\/\d+\/secret\.txt$/.test(p)),
        'the mount was staged',
      );
      const got = attack(paths);
      // only the operator's own open data directory can be listed: its entries name no computer
      const allowed = got.filter((g) => !(g.what === 'list' && g.path === dataDir));
      assert.deepEqual(allowed, [], `an unprivileged uid got at:\n${JSON.stringify(allowed, null, 1)}`);
      const listing = got.find((g) => g.path === dataDir)?.sample ?? '';
      for (const secret of Object.values(SECRETS)) assert.ok(!JSON.stringify(got).includes(secret));
      assert.deepEqual(listing.split(' ').sort(), ['computers', 'workspaces']);
    } finally {
      await service.close();
      rmSync(root, { recursive: true, force: true });
      rmSync(hidden, { recursive: true, force: true });
    }
  });

  it('against a real server: nothing under its data directory (socket, database, disks) or its sandboxes is open to an unprivileged uid', async (t) => {
    if (!diskImageSupport().ok) t.diagnostic('no disk images here: workspaces are plain directories');
    const hidden = mkdtempSync(join(tmpdir(), 'paddock-privacy-src-'));
    const mount = rootOnly(hidden, 'mount', 'secret.txt', SECRETS.mount);
    const project = tempProject(
      `computer:\n  profiles:\n    - id: secret\n      name: Secret\n      requires: [bash]\n      warm: 1\n      mounts: [{ source: ${mount}, target: /secret, readOnly: true }]\n`,
    );
    chmodSync(project.dir, 0o755);
    mkdirSync(project.dataDir, { mode: 0o755 });
    chmodSync(project.dataDir, 0o755);
    rootOnly(join(project.dir, '.paddock', 'skills'), 'demo', 'SKILL.md', SECRETS.skill);
    chmodSync(join(project.dir, '.paddock'), 0o700);
    const serve = await startServe(project);
    const client = await connectHttp(serve.url, serve.token);
    try {
      await client.callTool({ name: 'launch_computer', arguments: { profileId: 'secret' } });
      const r = await client.callTool({
        name: 'run_command',
        arguments: {
          script: `echo ${SECRETS.workspace} > /workspace/secret.txt; echo ${SECRETS.tmp} > /tmp/secret.txt; cat /secret/secret.txt /skills/demo/SKILL.md`,
          waitMs: 10_000,
        },
      });
      assert.match(JSON.stringify(r), new RegExp(`${SECRETS.mount}.*${SECRETS.skill}`));
      // a pooled sandbox of the profile is up too, with its own staged mount
      await pollUntil(() => /computer\.warm_ready/.test(serve.stderr()), 'a pooled sandbox', 60_000);
      const paths = targets(project.dataDir, serve.child.pid!);
      assert.ok(
        paths.some((p) => p.endsWith('/run/paddock.sock')),
        'the socket is among the targets',
      );
      const got = attack(paths);
      assert.deepEqual(got, [], `an unprivileged uid got at:\n${JSON.stringify(got, null, 1)}`);
    } finally {
      await client.close().catch(() => undefined);
      await serve.stop();
      project.cleanup();
      rmSync(hidden, { recursive: true, force: true });
    }
  });
});

describe('the directories that hold computers', () => {
  it('are closed to other accounts at start, and one every account may write to is refused', async () => {
    const root = mkdtempSync(join(tmpdir(), 'paddock-privacy-dirs-'));
    const backend = new BwrapBackend({ logger: silentLogger() });
    const start = (workspaceDir: string) =>
      new ComputerService({
        backend,
        config: computerSchema.parse({ autoLaunch: false, workspaceDir }),
        dataDir: join(root, 'data'),
        dockUrl: 'http://127.0.0.1:7331',
        logger: silentLogger(),
      });
    try {
      const open = join(root, 'open');
      mkdirSync(open, { mode: 0o755 });
      chmodSync(open, 0o755);
      const service = start(open);
      await service.close();
      assert.equal(lstatSync(open).mode & 0o777, 0o700);
      assert.equal(lstatSync(join(root, 'data', 'workspaces')).mode & 0o777, 0o700);
      const shared = join(root, 'shared');
      mkdirSync(shared);
      chmodSync(shared, 0o1777);
      assert.throws(
        () => start(shared),
        (e: unknown) => e instanceof Error && /every account may write to/.test(e.message),
      );
      assert.equal(lstatSync(shared).mode & 0o7777, 0o1777, 'a shared directory is left as it was');
    } finally {
      await backend.dispose();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
