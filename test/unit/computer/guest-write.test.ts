/**
 * The guest's file write, run directly on a temporary directory: with `noLinks` (the path as
 * written was checked) a symlink anywhere on the path writes nothing and answers `linked`;
 * without it (the host passed a resolved path) a link met there is an error, never followed.
 */
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { GuestFailure } from '../../../src/guest/failure.js';
import { writeFile } from '../../../src/guest/fs-ops.js';

describe('guest writeFile and links on the path', () => {
  let root = '';
  beforeEach(() => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'paddock-guest-write-')));
    mkdirSync(join(root, 'real'));
    mkdirSync(join(root, 'outside'));
    symlinkSync(join(root, 'outside'), join(root, 'dir-link'));
    symlinkSync(join(root, 'outside', 'made-by-link.txt'), join(root, 'real', 'dangling'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('writes a path with no link on it, as written, when asked for noLinks', async () => {
    const r = await writeFile(
      { path: join(root, 'real', 'a.txt'), overwrite: false, noLinks: true },
      Buffer.from('hi'),
    );
    assert.deepEqual(r, { bytesWritten: 2, created: true });
    assert.equal(readFileSync(join(root, 'real', 'a.txt'), 'utf8'), 'hi');
  });

  it('answers linked and writes nothing when a directory on the path is a link', async () => {
    const r = await writeFile(
      { path: join(root, 'dir-link', 'b.txt'), overwrite: true, noLinks: true },
      Buffer.from('x'),
    );
    assert.deepEqual(r, { bytesWritten: 0, created: false, linked: true });
    assert.deepEqual(readdirSync(join(root, 'outside')), []);
  });

  it('answers linked and creates nothing when the file itself is a dangling link, whatever overwrite says', async () => {
    for (const overwrite of [false, true]) {
      const r = await writeFile(
        { path: join(root, 'real', 'dangling'), overwrite, noLinks: true },
        Buffer.from('x'),
      );
      assert.equal(r.linked, true);
    }
    assert.equal(existsSync(join(root, 'outside', 'made-by-link.txt')), false);
    assert.deepEqual(readdirSync(join(root, 'real')).sort(), ['dangling'], 'no temporary file is left');
  });

  it('refuses, without following it, a link met on a path the host had resolved', async () => {
    for (const path of [join(root, 'dir-link', 'c.txt'), join(root, 'real', 'dangling')]) {
      await assert.rejects(
        writeFile({ path, overwrite: true }, Buffer.from('x')),
        (e: unknown) =>
          e instanceof GuestFailure && e.code === 'INVALID_ARGUMENT' && /symbolic link/.test(e.message),
        path,
      );
    }
    assert.deepEqual(readdirSync(join(root, 'outside')), []);
  });
});
