/**
 * Dock pages as hosts of browser computers: which page boots a computer, what a page may say for
 * it, and that the computer's link ends with its page. Pages are stand-ins that record what the
 * server sends them; the real page is covered by test/e2e/browser-computer.test.ts.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { IMAGE_VERSION, vmMachine } from '../../../src/computer/backend/browser/image.js';
import { profileSchema } from '../../../src/config/computer-schema.js';
import { silentLogger } from '../../../src/shared/logger.js';
import type { DockConnection } from '../../../src/web/dock/actions.js';
import { DockVmHosts } from '../../../src/web/dock/vm-hosts.js';
import { REPO_ROOT } from '../../helpers/paddock-process.js';

function page(): DockConnection & { sent: Record<string, unknown>[] } {
  const sent: Record<string, unknown>[] = [];
  const ws = { OPEN: 1, readyState: 1, send: (text: string) => sent.push(JSON.parse(text)) };
  return { ws, sent } as unknown as DockConnection & { sent: Record<string, unknown>[] };
}

/** Two pages that offered to host; the first asked for the next launch. */
function twoPages() {
  const hosts = new DockVmHosts(silentLogger());
  const a = page();
  const b = page();
  hosts.offer(a);
  hosts.offer(b);
  hosts.prefer(a);
  return { hosts, a, b };
}

describe('dock pages as hosts of browser computers', () => {
  it('is unavailable without a page that offered, and names what to do', () => {
    const hosts = new DockVmHosts(silentLogger());
    assert.match(String(hosts.unavailable()), /no signed-in dock page .* open the dock/);
    assert.throws(() => hosts.claim(vmMachine()), /NOT_RUNNING|cannot boot/);
  });

  it('boots in the page that asked for the launch, one computer a page', () => {
    const { hosts, a, b } = twoPages();
    hosts.claim(vmMachine());
    assert.equal(a.sent[0]?.type, 'vm.boot');
    assert.equal(b.sent.length, 0);
    hosts.claim(vmMachine());
    assert.equal(b.sent[0]?.type, 'vm.boot', 'the next computer goes to the free page');
    assert.match(String(hosts.unavailable()), /already hosts/);
  });

  it('refuses bytes a page sends for a computer it does not host, and relays its own', () => {
    const { hosts, a, b } = twoPages();
    const link = hosts.claim(vmMachine());
    const vm = String(a.sent[0]?.vm);
    const got: string[] = [];
    link.onData((port, data) => got.push(`${port}:${data.toString()}`));
    assert.throws(
      () => hosts.fromPage(b, vm, 1, Buffer.from('forged').toString('base64')),
      /hosts no computer/,
    );
    hosts.fromPage(a, vm, 1, Buffer.from('@0 ready').toString('base64'));
    assert.deepEqual(got, ['1:@0 ready']);
  });

  it('ends the computer when its page goes, and the page is no host any more', async () => {
    const hosts = new DockVmHosts(silentLogger());
    const a = page();
    hosts.offer(a);
    const link = hosts.claim(vmMachine());
    hosts.drop(a);
    assert.match(await link.gone, /went away/);
    assert.notEqual(hosts.unavailable(), null);
  });

  it('refuses a browser profile with what a browser computer cannot have', () => {
    const r = profileSchema.safeParse({
      id: 'tab',
      name: 'Tab',
      backend: 'browser',
      mounts: [{ source: '/srv', target: '/srv' }],
      warm: 1,
    });
    assert.equal(r.success, false);
    const paths = r.error?.issues.map((i) => i.path.join('.')).sort();
    assert.deepEqual(paths, ['mounts', 'warm']);
  });

  it('builds images of the version the server speaks', () => {
    const script = readFileSync(join(REPO_ROOT, 'scripts', 'build-browser-image.mjs'), 'utf8');
    assert.equal(Number(/const IMAGE_VERSION = (\d+);/.exec(script)?.[1]), IMAGE_VERSION);
  });

  it('tells the page to restore the snapshot only when the launch restores one', () => {
    const { hosts, a, b } = twoPages();
    hosts.claim({ ...vmMachine(), restore: true });
    assert.equal(a.sent[0]?.state, '/dock/vm/image/state.bin');
    // the devices the snapshot was made with (machine.json), so the page restores the same machine
    assert.deepEqual(a.sent[0]?.emulator, vmMachine().emulator);
    hosts.claim(vmMachine());
    assert.equal(b.sent[0]?.type, 'vm.boot');
    assert.equal(b.sent[0]?.state, undefined, 'a cold boot names no snapshot');
  });
});
