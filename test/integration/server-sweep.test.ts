import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CgroupRoot } from '../../src/computer/backend/bwrap/cgroups.js';
import { SandboxPidFiles } from '../../src/computer/backend/bwrap/sandbox-pids.js';
import { silentLogger } from '../../src/shared/logger.js';
import { pollUntil } from '../helpers/poll.js';

/** A pid that no process has right now (a server that is gone). */
function deadPid(): number {
  for (let pid = 4_000_000; ; pid--) if (!existsSync(`/proc/${pid}`)) return pid;
}

function sleeper(): number {
  const child = spawn('sleep', ['1000'], { detached: true, stdio: 'ignore' });
  child.unref();
  return child.pid!;
}

function alive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

const pidsRoot = '/sys/fs/cgroup/pids';
const ownPidsGroup = (() => {
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((l) => /^\d+:pids:/.test(l));
    return line ? join(pidsRoot, line.split(':')[2] ?? '/') : null;
  } catch {
    return null;
  }
})();
const canWriteCgroups =
  process.getuid?.() === 0 && ownPidsGroup !== null && existsSync(join(ownPidsGroup, 'cgroup.procs'));

describe('start-up sweep of what a killed server left', () => {
  it('kills the processes still in a dead server’s cgroup, then removes the group', {
    skip: !canWriteCgroups && 'needs writable v1 pids cgroups (root)',
  }, async () => {
    const group = join(ownPidsGroup!, `paddock-${deadPid()}-5eed01`);
    const job = join(group, 'g1');
    const pid = sleeper();
    try {
      // The group is stale to every server: one that another test starts meanwhile may sweep it
      // between the mkdir and the write. Set it up again until the pid is in.
      for (let attempt = 1; ; attempt++) {
        mkdirSync(job, { recursive: true });
        try {
          writeFileSync(join(job, 'cgroup.procs'), String(pid));
          break;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 20) throw e;
        }
      }
      const root = CgroupRoot.create(silentLogger());
      try {
        await pollUntil(() => !alive(pid), 'the left-over process to be killed');
        assert.equal(existsSync(group), false, 'the stale group is removed');
      } finally {
        await root?.dispose();
      }
    } finally {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // killed by the sweep
      }
    }
  });

  it('kills a sandbox tracked by pid file whose server is gone, and never a process that reused its pid', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-sweep-'));
    const orphan = sleeper();
    const stranger = sleeper();
    try {
      const files = new SandboxPidFiles(dir);
      const startOf = (pid: number) => {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
      };
      const server = deadPid();
      writeFileSync(join(dir, String(orphan)), `${server} ${startOf(orphan)}\n`);
      // same pid, other start time: the pid was reused by a process that is not a sandbox
      writeFileSync(join(dir, String(stranger)), `${server} 1\n`);
      files.sweep(silentLogger());
      await pollUntil(() => !alive(orphan), 'the orphaned sandbox to be killed');
      assert.ok(alive(stranger), 'a process that reused a recorded pid is left alone');
      assert.equal(existsSync(join(dir, String(orphan))), false);
      assert.equal(existsSync(join(dir, String(stranger))), false, 'the stale record is dropped');
    } finally {
      for (const pid of [orphan, stranger]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
