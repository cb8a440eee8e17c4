/**
 * Paddock's own top layer of an image, made once at import: what a computer needs of an image
 * that the image may not have. The guest account (uid 1000, home /workspace) is added to
 * `/etc/passwd` and `/etc/group` when the image has no uid 1000 (an image that has one, such as
 * the `node` user of the Node images, keeps it: jobs run as that account), and where the image
 * has apt, apt is told to download as root instead of switching to `_apt`: inside a computer no
 * process may change its uid, root's included (see docs/images.md).
 *
 * Directories of this layer take the owner and mode of the same directory in the layer below
 * that has it, since overlayfs shows the topmost layer's.
 */
import { chmodSync, lchownSync, lstatSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GUEST_UID, GUEST_USER, GUEST_WORKSPACE } from '../link/guest-layout.js';
import { hostIdOf, type ImageIdBase } from './ids.js';

/** apt's setting inside every image that has apt. */
export const APT_SANDBOX_FILE = 'etc/apt/apt.conf.d/00paddock-sandbox';

/** The first of `layers` (top first) that has `rel` as a file, or null when a layer deleted it or none has it. */
function merged(layers: string[], rel: string): { path: string; text: string } | null {
  for (const layer of layers) {
    try {
      const s = lstatSync(join(layer, rel));
      if (s.isFile()) return { path: join(layer, rel), text: readFileSync(join(layer, rel), 'utf8') };
      return null; // a whiteout, a link or a directory hides what is below
    } catch {
      // not in this layer
    }
  }
  return null;
}

function dirIn(layers: string[], rel: string): { mode: number; uid: number; gid: number } | null {
  for (const layer of layers) {
    try {
      const s = lstatSync(join(layer, rel));
      if (s.isDirectory()) return { mode: s.mode & 0o7777, uid: s.uid, gid: s.gid };
      return null;
    } catch {
      // next
    }
  }
  return null;
}

function withGuest(text: string, line: (name: string) => string): string {
  const rows = text.split('\n').filter((l) => l.length > 0);
  if (rows.some((r) => r.split(':')[2] === String(GUEST_UID))) return text;
  const taken = new Set(rows.map((r) => r.split(':')[0]));
  const name = taken.has(GUEST_USER) ? `paddock-${GUEST_USER}` : GUEST_USER;
  return `${rows.join('\n')}\n${line(name)}\n`;
}

/** Writes the top layer into `top` (which must not exist), over `layers` (top first). */
export function writeTopLayer(top: string, layers: string[], ids: ImageIdBase): void {
  const root = hostIdOf(0, ids);
  const dir = (rel: string) => {
    const path = join(top, rel);
    const model = dirIn(layers, rel) ?? { mode: 0o755, uid: root, gid: root };
    mkdirSync(path, { recursive: true });
    chmodSync(path, model.mode);
    lchownSync(path, model.uid, model.gid);
  };
  const file = (rel: string, text: string) => {
    writeFileSync(join(top, rel), text, { mode: 0o644 });
    lchownSync(join(top, rel), root, root);
  };
  mkdirSync(top, { mode: 0o755 });
  lchownSync(top, root, root);
  if (dirIn(layers, 'etc') === null && layers.some((l) => exists(join(l, 'etc')))) return; // /etc is no directory
  dir('etc');
  const passwd = merged(layers, 'etc/passwd')?.text ?? 'root:x:0:0:root:/root:/bin/sh\n';
  const shell = ['bin/bash', 'usr/bin/bash'].some((p) => layers.some((l) => exists(join(l, p))))
    ? '/bin/bash'
    : '/bin/sh';
  file(
    'etc/passwd',
    withGuest(passwd, (n) => `${n}:x:${GUEST_UID}:${GUEST_UID}:Paddock agent:${GUEST_WORKSPACE}:${shell}`),
  );
  const group = merged(layers, 'etc/group')?.text ?? 'root:x:0:\n';
  file(
    'etc/group',
    withGuest(group, (n) => `${n}:x:${GUEST_UID}:`),
  );
  if (dirIn(layers, 'etc/apt')) {
    dir('etc/apt');
    dir('etc/apt/apt.conf.d');
    file(
      APT_SANDBOX_FILE,
      '// Written by Paddock: no process of a computer may change its uid, so apt downloads as root.\nAPT::Sandbox::User "root";\n',
    );
  }
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
