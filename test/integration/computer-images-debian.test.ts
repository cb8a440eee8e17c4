/**
 * Computers on a Debian image built by mmdebstrap (test/helpers/images.ts: once, then cached):
 * root inside installs a package with apt-get through the egress policy from a Debian mirror
 * the test serves on loopback; each computer writes in a layer of its own on its own disk, so an
 * install is invisible to another computer and never reaches the image; and root inside attacks
 * the boundary — mounts, namespaces, devices, the guest agent, /proc/sys, uid changes, the disk
 * limit — and fails at each.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { ImageStore, imageIdsOf } from '../../src/computer/images/index.js';
import { profileImageName } from '../../src/computer/images/profile-image.js';
import { ROOT_PATH } from '../../src/computer/link/guest-layout.js';
import { computerSchema, profileSchema } from '../../src/config/computer-schema.js';
import { DEBIAN_TEST_IMAGE, debianProfile, debianTestStore, imageSkipReason } from '../helpers/images.js';
import { pollUntil } from '../helpers/poll.js';
import {
  launchRunning,
  readTerminalUntil,
  runUntilExit,
  toolCaller,
  withComputer,
} from '../unit/computer/fixture.js';
import { withEgressComputer } from './egress-fixture.js';

const skip = imageSkipReason();
/** A small package with no dependency the image lacks. */
const PACKAGE = 'hello';

/** A flat Debian repository of the host's own `PACKAGE` .deb (apt-get download), served on loopback. */
async function localMirror(dir: string): Promise<{ server: Server; port: number }> {
  execFileSync('apt-get', ['download', '-q', PACKAGE], { cwd: dir, stdio: 'pipe', timeout: 120_000 });
  const debs = readdirSync(dir).filter((f) => f.endsWith('.deb'));
  const stanzas = debs.map((f) => {
    const bytes = readFileSync(join(dir, f));
    const control = execFileSync('dpkg-deb', ['-f', join(dir, f)], { encoding: 'utf8' }).trimEnd();
    const sha = createHash('sha256').update(bytes).digest('hex');
    return `${control}\nFilename: ./${f}\nSize: ${bytes.length}\nSHA256: ${sha}\n`;
  });
  const packages = Buffer.from(stanzas.join('\n'));
  writeFileSync(join(dir, 'Packages'), packages);
  writeFileSync(
    join(dir, 'Release'),
    [
      'Origin: paddock-test',
      'Label: paddock-test',
      'Suite: test',
      'Codename: test',
      `Date: ${new Date().toUTCString()}`,
      'SHA256:',
      ` ${createHash('sha256').update(packages).digest('hex')} ${packages.length} Packages`,
      '',
    ].join('\n'),
  );
  const server = createServer((req, res) => {
    const name = (req.url ?? '/').split('?')[0]!.replace(/^\/(\.\/)?/, '');
    const path = join(dir, name);
    if (!/^[A-Za-z0-9._+~-]+$/.test(name) || !existsSync(path)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-length': statSync(path).size }).end(readFileSync(path));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe('computers on a Debian image (mmdebstrap)', { concurrency: false, skip }, () => {
  let imagesDir = '';
  let imageLayers: string[] = [];
  before(async () => {
    imagesDir = await debianTestStore();
    const store = new ImageStore(imagesDir, imageIdsOf(computerSchema.parse({})));
    const name = profileImageName(profileSchema.parse(debianProfile('x', 'guest')).image!, process.cwd());
    imageLayers = store.mountable(name, 'build it').lowerDirs;
  });

  /** Paths under the image's layers on the host that `marker` names. */
  const inImage = (rel: string) => imageLayers.filter((l) => existsSync(join(l, rel)));

  it('root inside installs a package with apt-get through the egress policy (by proxy and by name), the package works, and the image stays as it was', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-mirror-'));
    let mirror: { server: Server; port: number } | null = null;
    try {
      try {
        mirror = await localMirror(dir);
      } catch (e) {
        assert.fail(
          `could not download ${PACKAGE} for the test mirror (apt-get download): ${(e as Error).message}`,
        );
      }
      const { port } = mirror;
      await withEgressComputer(
        {
          imagesDir,
          policy: { http: { allow: [`deb.test:${port}`], hosts: { 'deb.test': '127.0.0.1' } } },
          profile: {
            image: DEBIAN_TEST_IMAGE,
            user: 'root',
            limits: { diskMb: 512, memoryMb: 1024, processes: 256 },
          },
        },
        async ({ run, rows }) => {
          const r = await run(
            [
              'set -e',
              'rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*',
              `echo "deb [trusted=yes] http://deb.test:${port}/ ./" > /etc/apt/sources.list.d/test.list`,
              'apt-get update -q',
              `DEBIAN_FRONTEND=noninteractive apt-get install -y -q ${PACKAGE}`,
              'echo "--"; hello; id -u',
              // by name, with no proxy: the image's own C library and nsswitch.conf ask the agent's resolver
              'echo "--"; getent hosts deb.test',
              'env -u http_proxy -u HTTP_PROXY -u all_proxy -u ALL_PROXY apt-get update -q >/dev/null && echo "by name ok"',
            ].join('\n'),
            240_000,
          );
          assert.equal(r.exitCode, 0, `${r.stdout}\n${r.stderr}`);
          assert.match(r.stdout, /--\nHello, world!\n0\n/);
          assert.match(r.stdout, /--\n127\.77\.\d+\.\d+\s+deb\.test\n/, 'the name has an address of its own');
          assert.match(r.stdout, /\nby name ok\n/);
          const hosts = rows().map((row) => JSON.stringify(row.input));
          assert.ok(
            hosts.some((h) => h.includes('deb.test')),
            `an egress audit row names the mirror: ${hosts.join(' ')}`,
          );
        },
      );
      assert.deepEqual(inImage('usr/bin/hello'), [], 'the install never reached the image');
    } finally {
      mirror?.server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("one computer's changes to its system are invisible to another computer of the same profile, and gone at a fresh launch", async () => {
    const profiles = [debianProfile('deb', 'root')];
    await withComputer({ imagesDir, computer: { profiles } }, async ({ manager: a }) => {
      await withComputer({ imagesDir, computer: { profiles } }, async ({ manager: b }) => {
        await launchRunning(a, 'deb');
        await launchRunning(b, 'deb');
        const wrote = await runUntilExit(
          a,
          'set -e; echo a > /usr/local/bin/marker-a; echo a >> /etc/motd; rm /usr/bin/tac; echo done',
        );
        assert.equal(wrote.exitCode, 0, wrote.stderr);
        const seen = await runUntilExit(
          b,
          'ls /usr/local/bin/marker-a 2>&1; grep -c "^a$" /etc/motd; ls /usr/bin/tac; find / -xdev -name "marker-a*" 2>/dev/null | wc -l',
        );
        assert.match(seen.stdout, /No such file or directory/);
        assert.match(seen.stdout, /\n0\n\/usr\/bin\/tac\n0\n$/);
        const own = await runUntilExit(a, 'cat /usr/local/bin/marker-a; ls /usr/bin/tac 2>&1');
        assert.match(own.stdout, /^a\n.*No such file/s);
        await launchRunning(a, 'deb');
        const fresh = await runUntilExit(a, 'ls /usr/local/bin/; ls /usr/bin/tac');
        assert.equal(fresh.stdout, '/usr/bin/tac\n', 'a fresh launch starts from the image again');
      });
    });
    assert.deepEqual(inImage('usr/local/bin/marker-a'), []);
    assert.ok(inImage('usr/bin/tac').length > 0, 'the image keeps the file a computer removed');
  });

  it('the warm pool serves a profile on an image: the launch takes a pooled sandbox that runs as the profile says, on a root layer of its own', async () => {
    await withComputer(
      { imagesDir, computer: { profiles: [debianProfile('warmdeb', 'root', { warm: 1 })] } },
      async ({ manager }) => {
        await pollUntil(() => manager.pool.ready('warmdeb') >= 1, 'a warm sandbox on the image', 60_000);
        const c = await launchRunning(manager, 'warmdeb');
        assert.equal(c.bootSource, 'warm');
        const r = await runUntilExit(
          manager,
          'id -un; echo $USER; ls /usr/local/bin | wc -l; touch /usr/local/bin/w && echo ok',
        );
        assert.equal(r.stdout, 'root\nroot\n0\nok\n');
      },
    );
  });

  it('with workspace keep, the computer keeps its system changes across a relaunch', async () => {
    await withComputer(
      { imagesDir, computer: { profiles: [debianProfile('kept', 'root', { workspace: 'keep' })] } },
      async ({ manager }) => {
        await launchRunning(manager, 'kept');
        await runUntilExit(manager, 'echo kept > /usr/local/bin/kept; echo w > /workspace/w');
        await launchRunning(manager, 'kept');
        const r = await runUntilExit(manager, 'cat /usr/local/bin/kept /workspace/w');
        assert.equal(r.stdout, 'kept\nw\n');
      },
    );
  });

  it('root inside cannot mount, unshare, make devices, change uid, or trace, signal or read the guest agent', async () => {
    await withComputer(
      { imagesDir, computer: { profiles: [debianProfile('deb', 'root')] } },
      async ({ manager }) => {
        await launchRunning(manager, 'deb');
        const attack = [
          'try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name=ALLOWED"; else echo "$name=denied"; fi; }',
          'agent=$(grep -l "^Uid:[[:space:]]*65536" /proc/[0-9]*/status | head -1 | cut -d/ -f3)',
          // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
          'echo "agent=${agent:-none}"',
          'try unshare-user unshare -U true',
          'try unshare-mount unshare -m true',
          'try unshare-net unshare -n true',
          'try unshare-pid unshare -p -f true',
          `try mount-tmpfs perl -e 'my ($s,$t,$f)=("none","/mnt","tmpfs"); exit(syscall(165,$s,$t,$f,0,0) == -1 ? 1 : 0)'`,
          `try mount-cgroup perl -e 'my ($s,$t,$f)=("none","/mnt","cgroup2"); exit(syscall(165,$s,$t,$f,0,0) == -1 ? 1 : 0)'`,
          `try remount-root perl -e 'my ($s,$t,$f)=("none","/","none"); exit(syscall(165,$s,$t,$f,32,0) == -1 ? 1 : 0)'`,
          'try mknod-block mknod /tmp/sda b 8 0',
          'try mknod-char mknod /tmp/mem c 1 1',
          'try kill-agent kill -0 "$agent"',
          'try read-agent-environ cat /proc/$agent/environ',
          'try read-agent-mem head -c 1 /proc/$agent/mem',
          `try ptrace-agent perl -e 'exit(syscall(101, 16, $ARGV[0], 0, 0) == -1 ? 1 : 0)' "$agent"`,
          'try setuid-guest setpriv --reuid=1000 true',
          'try setuid-agent setpriv --reuid=65536 true',
          'try sysctl sh -c "echo 1 > /proc/sys/kernel/sysrq"',
          'try chroot chroot / true',
          'try disk-device sh -c "ls /dev | grep -E \\"^(loop|sd|vd|nvme)\\""',
          'grep -E "^(CapEff|CapPrm|CapAmb|NoNewPrivs)" /proc/self/status',
          'id -u; echo image-write; echo pwned > /usr/bin/paddock-pwned && echo wrote-own-layer',
        ].join('\n');
        const r = await runUntilExit(manager, attack);
        assert.match(r.stdout, /agent=\d+\n/, r.stdout);
        assert.doesNotMatch(r.stdout, /=ALLOWED/, r.stdout);
        for (const name of [
          'unshare-user',
          'mount-tmpfs',
          'mknod-block',
          'kill-agent',
          'ptrace-agent',
          'setuid-agent',
        ])
          assert.match(r.stdout, new RegExp(`${name}=denied`));
        assert.match(r.stdout, /CapEff:\t000000000000000b/);
        assert.match(r.stdout, /CapAmb:\t0000000000000000/);
        assert.match(r.stdout, /NoNewPrivs:\t1/);
        assert.match(r.stdout, /\n0\nimage-write\nwrote-own-layer\n/);
      },
    );
    assert.deepEqual(
      inImage('usr/bin/paddock-pwned'),
      [],
      'a write as root went to the computer, never to the image',
    );
  });

  it("a terminal on a root profile runs as root with root's few capabilities only, and the fixed root PATH", async () => {
    await withComputer(
      { imagesDir, computer: { profiles: [debianProfile('deb', 'root')] } },
      async ({ manager, ctx }) => {
        await launchRunning(manager, 'deb');
        const call = toolCaller(manager, ctx);
        const terminalId = String((await call('create_terminal', {})).terminalId);
        await call('send_terminal_input', {
          terminalId,
          text: 'echo "U=$(id -u) $(grep CapEff /proc/self/status | cut -f2) P=$PATH"; echo DONE\n',
        });
        const { text } = await readTerminalUntil(call, terminalId, /^DONE\r?$/m, 'the terminal to answer');
        assert.match(
          text,
          new RegExp(`^U=0 000000000000000b P=${ROOT_PATH.replaceAll('/', '\\/')}\\r?$`, 'm'),
          text,
        );
      },
    );
  });

  it("root replacing a program of the image that the agent uses gains nothing: it runs without the agent's capabilities, outside its Landlock domain", async () => {
    await withComputer(
      { imagesDir, computer: { profiles: [debianProfile('deb', 'root')] } },
      async ({ manager }) => {
        await launchRunning(manager, 'deb');
        const plant = await runUntilExit(
          manager,
          [
            'set -e',
            'agent=$(grep -l "^Uid:[[:space:]]*65536" /proc/[0-9]*/status | head -1 | cut -d/ -f3)',
            'mv /usr/bin/mkfifo /usr/bin/mkfifo.real',
            'printf "#!/bin/sh\\n{ id -u; grep CapEff /proc/self/status; head -c 1 /proc/%s/mem; } >> /tmp/trojan 2>&1\\nexec /usr/bin/mkfifo.real \\"\\$@\\"\\n" "$agent" > /usr/bin/mkfifo',
            'chmod 755 /usr/bin/mkfifo',
            'echo planted',
          ].join('\n'),
        );
        assert.equal(plant.stdout, 'planted\n', plant.stderr);
        // every job takes two of the agent's FIFOs; the pool refills (with mkfifo) after a few dozen
        for (let i = 0; i < 40; i++) await runUntilExit(manager, 'true');
        const r = await runUntilExit(manager, 'cat /tmp/trojan');
        assert.match(r.stdout, /^65536\nCapEff:\t0{16}\n.*Permission denied/s, r.stdout);
        assert.doesNotMatch(r.stdout, /CapEff:\t0*[1-9a-f]/);
      },
    );
  });

  it('the guest account on an image has no capability and cannot change the system', async () => {
    await withComputer(
      { imagesDir, computer: { profiles: [debianProfile('deb', 'guest')] } },
      async ({ manager }) => {
        await launchRunning(manager, 'deb');
        const r = await runUntilExit(
          manager,
          'id -un; grep -E "^Cap(Eff|Prm|Amb)" /proc/self/status; touch /usr/bin/x 2>&1; apt-get install -y hello 2>&1 | tail -1; echo ok > /workspace/ok && cat /workspace/ok',
        );
        assert.match(r.stdout, /^agent\nCapPrm:\t0{16}\nCapEff:\t0{16}\n/);
        assert.match(r.stdout, /CapAmb:\t0{16}/);
        assert.match(r.stdout, /touch: cannot touch '\/usr\/bin\/x': Permission denied/);
        assert.match(r.stdout, /are you root\?/);
        assert.match(r.stdout, /\nok\n$/);
      },
    );
  });

  it("root's changes to the system count against diskMb with /workspace and /tmp: filling it ends in ENOSPC, and the host gives no more", async () => {
    const profiles = [debianProfile('tiny', 'root', { limits: { diskMb: 48 } })];
    await withComputer({ imagesDir, computer: { profiles } }, async ({ manager, dataDir }) => {
      await launchRunning(manager, 'tiny');
      const r = await runUntilExit(
        manager,
        [
          'msg=$(head -c 64M /dev/zero 2>&1 >/usr/local/fill); echo "usr=$? $msg"',
          // the root layer, /workspace and /tmp are one disk
          'df -m / /workspace | tail -2 | awk "{print \\$2}"',
          'msg=$(head -c 1M /dev/zero 2>&1 >/workspace/x); echo "workspace $msg"',
          // a change to a file of the image copies it up into the computer's layer, on the same disk
          'msg=$(sh -c "echo >> /usr/bin/perl" 2>&1); echo "copy-up $msg"',
        ].join('\n'),
      );
      assert.match(r.stdout, /usr=1 .*No space left on device/);
      assert.match(r.stdout, /\n(\d+)\n\1\n/, 'df shows the same disk for / and /workspace');
      assert.match(r.stdout, /workspace .*No space left on device/);
      assert.match(r.stdout, /copy-up .*No space left on device/);
      const disks = readdirSync(join(dataDir, 'computers'), { recursive: true })
        .map(String)
        .filter((f) => f.endsWith('disk.img'));
      assert.ok(disks.length > 0);
      for (const d of disks) {
        const s = statSync(join(dataDir, 'computers', d));
        assert.ok(s.blocks * 512 <= 48 * 1024 * 1024, `${d} takes ${s.blocks * 512} bytes on the host`);
      }
    });
  });
});
