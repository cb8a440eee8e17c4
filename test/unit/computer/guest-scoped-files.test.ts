/**
 * The guest's file operations run directly on a temporary directory of this machine, with the
 * policy's real file scope: every symlink is judged where it lies, the object reached where it
 * is, and nothing outside the roots is read, listed, created or changed.
 */
import assert from 'node:assert/strict';
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { GuestFailure } from '../../../src/guest/failure.js';
import { listFiles, readFile, resolveDir, writeFile } from '../../../src/guest/fs-ops.js';
import { sandboxFor } from '../policy/helpers.js';

function codeOf(e: unknown): string {
  return e instanceof GuestFailure ? e.code : `not a guest failure: ${String(e)}`;
}

describe('guest file operations within the policy roots', () => {
  let top = '';
  let ws = '';
  let out = '';
  let scope = sandboxFor({}).fileScope('read');
  let wscope = sandboxFor({}).fileScope('write');
  const read = (path: string) => readFile({ path, scope, offset: 0, byteLimit: 4096 });
  const readText = async (path: string) => (await read(path)).attachment.toString('utf8');
  const write = (path: string, text: string, overwrite = true) =>
    writeFile({ path, scope: wscope, overwrite }, Buffer.from(text));
  const refusal = async (p: Promise<unknown>): Promise<string> => {
    try {
      await p;
    } catch (e) {
      return codeOf(e);
    }
    return 'allowed';
  };

  beforeEach(() => {
    top = realpathSync(mkdtempSync(join(tmpdir(), 'paddock-scoped-')));
    ws = join(top, 'ws');
    out = join(top, 'out');
    mkdirSync(join(ws, 'sub'), { recursive: true });
    mkdirSync(join(ws, '.git'));
    mkdirSync(out);
    writeFileSync(join(ws, 'b.txt'), 'inside');
    writeFileSync(join(ws, 'sub', 'c.txt'), 'deeper');
    writeFileSync(join(ws, '.git', 'config'), 'denied');
    writeFileSync(join(out, 's.txt'), 'OUTSIDE');
    const policy = sandboxFor({ files: { read: [ws], write: [ws], deny: [join(ws, '.git')] } });
    scope = policy.fileScope('read');
    wscope = policy.fileScope('write');
  });
  afterEach(() => rmSync(top, { recursive: true, force: true }));

  it('follows links that stay inside the roots, file and directory, relative and absolute', async () => {
    symlinkSync('b.txt', join(ws, 'ok-link'));
    symlinkSync('sub/', join(ws, 'dir-link'));
    symlinkSync(join(ws, 'sub', 'c.txt'), join(ws, 'abs-link'));
    symlinkSync('../b.txt', join(ws, 'sub', 'up-link'));
    assert.equal(await readText(join(ws, 'ok-link')), 'inside');
    assert.equal(await readText(join(ws, 'dir-link', 'c.txt')), 'deeper');
    assert.equal(await readText(join(ws, 'abs-link')), 'deeper');
    assert.equal(await readText(join(ws, 'sub', 'up-link')), 'inside');
    const listed = await listFiles({ path: join(ws, 'dir-link'), scope, offset: 0, limit: 10 });
    assert.deepEqual(
      listed.entries.map((e) => e.name),
      ['c.txt', 'up-link'],
    );
    const r = await write(join(ws, 'dir-link', 'new.txt'), 'made');
    assert.equal(r.created, true);
    assert.equal(readFileSync(join(ws, 'sub', 'new.txt'), 'utf8'), 'made');
    assert.equal((await read(join(ws, 'b.txt'))).value.rule, `files.read[0]=${ws}`);
  });

  it('refuses a link to a file or a directory outside the roots, for every operation, naming the link', async () => {
    symlinkSync(join(out, 's.txt'), join(ws, 'pw'));
    symlinkSync(out, join(ws, 'od'));
    for (const p of [read(join(ws, 'pw')), read(join(ws, 'od', 's.txt'))]) {
      const e = await p.catch((x: unknown) => x);
      assert.ok(e instanceof GuestFailure && e.code === 'POLICY_DENIED', String(e));
      assert.match(e.message, /-> /, 'the refusal says which link led where');
      assert.ok(Array.isArray(e.details?.links) && e.details.links.length >= 1);
    }
    assert.equal(
      await refusal(listFiles({ path: join(ws, 'od'), scope, offset: 0, limit: 10 })),
      'POLICY_DENIED',
    );
    assert.equal(await refusal(write(join(ws, 'od', 'new'), 'x')), 'POLICY_DENIED');
    assert.equal(await refusal(write(join(ws, 'pw'), 'x')), 'POLICY_DENIED');
    assert.equal(await refusal(resolveDir({ path: join(ws, 'od'), scope })), 'POLICY_DENIED');
    assert.deepEqual(readdirSync(out), ['s.txt']);
    assert.equal(readFileSync(join(out, 's.txt'), 'utf8'), 'OUTSIDE');
  });

  it('refuses a link that lies outside the roots even when it leads back inside', async () => {
    // out/back -> ws/b.txt: the walk meets a link outside the roots and does not follow it
    symlinkSync(join(ws, 'b.txt'), join(out, 'back'));
    symlinkSync(join(out, 'back'), join(ws, 'via-out'));
    assert.equal(await refusal(read(join(ws, 'via-out'))), 'POLICY_DENIED');
    // a plain directory outside on the way is not a link: `..` through it is judged where it ends
    symlinkSync(`${out}/../ws/b.txt`, join(ws, 'dotdot'));
    assert.equal(await readText(join(ws, 'dotdot')), 'inside');
  });

  it('refuses magic links (/proc/self/root, /proc/<pid>/cwd, /dev/fd) as links outside the roots', async () => {
    symlinkSync(`/proc/self/root${ws}/b.txt`, join(ws, 'proc-root'));
    symlinkSync(`/proc/${process.pid}/cwd`, join(ws, 'proc-cwd'));
    symlinkSync('/dev/fd/0', join(ws, 'fd0'));
    symlinkSync(`/proc/${process.pid}/root/etc`, join(ws, 'proc-etc'));
    for (const name of ['proc-root', 'proc-cwd', 'fd0']) {
      assert.equal(await refusal(read(join(ws, name))), 'POLICY_DENIED', name);
    }
    assert.equal(
      await refusal(listFiles({ path: join(ws, 'proc-etc'), scope, offset: 0, limit: 5 })),
      'POLICY_DENIED',
    );
    assert.equal(await refusal(write(join(ws, 'proc-etc', 'x'), 'x')), 'POLICY_DENIED');
  });

  it('refuses dangling links outside, creates nothing through them, and an exclusive create refuses any link', async () => {
    symlinkSync(join(out, 'made.txt'), join(ws, 'dangling-out'));
    symlinkSync('fresh.txt', join(ws, 'dangling-in'));
    symlinkSync(join(out, 'nodir', 'x'), join(ws, 'deep-out'));
    assert.equal(await refusal(write(join(ws, 'dangling-out'), 'x')), 'POLICY_DENIED');
    assert.equal(await refusal(write(join(ws, 'dangling-out'), 'x', false)), 'POLICY_DENIED');
    assert.equal(await refusal(write(join(ws, 'deep-out'), 'x')), 'POLICY_DENIED');
    assert.equal(await refusal(write(join(ws, 'dangling-in'), 'x', false)), 'FILE_EXISTS');
    assert.equal(
      existsSync(join(ws, 'fresh.txt')),
      false,
      'a create-only write through a dangling link creates nothing',
    );
    assert.equal((await write(join(ws, 'dangling-in'), 'now')).created, true);
    assert.equal(
      readFileSync(join(ws, 'fresh.txt'), 'utf8'),
      'now',
      'a replacing write lands at the link target',
    );
    assert.deepEqual(readdirSync(out), ['s.txt']);
  });

  it('refuses loops and chains longer than the kernel follows, without hanging', async () => {
    symlinkSync('loop-b', join(ws, 'loop-a'));
    symlinkSync('loop-a', join(ws, 'loop-b'));
    symlinkSync('self', join(ws, 'self'));
    for (const name of ['loop-a', 'self']) {
      const e = await read(join(ws, name)).catch((x: unknown) => x);
      assert.ok(
        e instanceof GuestFailure &&
          e.code === 'INVALID_ARGUMENT' &&
          /levels of symbolic links/.test(e.message),
      );
    }
    let prev = 'b.txt';
    for (let i = 0; i < 45; i++) {
      symlinkSync(prev, join(ws, `chain${i}`));
      prev = `chain${i}`;
    }
    assert.equal(await readText(join(ws, 'chain30')), 'inside', 'a chain of 31 links is followed');
    assert.equal(await refusal(read(join(ws, 'chain44'))), 'INVALID_ARGUMENT');
  });

  it('applies deny roots to where links lead and to links that lie in them', async () => {
    symlinkSync('.git/config', join(ws, 'cfg'));
    symlinkSync(join(ws, 'b.txt'), join(ws, '.git', 'inner'));
    symlinkSync('.git/inner', join(ws, 'via-git'));
    assert.equal(await refusal(read(join(ws, 'cfg'))), 'POLICY_DENIED');
    assert.equal(await refusal(read(join(ws, 'via-git'))), 'POLICY_DENIED');
    assert.equal(await refusal(write(join(ws, 'cfg'), 'x')), 'POLICY_DENIED');
    assert.equal(readFileSync(join(ws, '.git', 'config'), 'utf8'), 'denied');
  });

  it('answers missing paths outside the roots as refused, so nothing about outside is told', async () => {
    symlinkSync(join(out, 'absent'), join(ws, 'to-absent'));
    symlinkSync(join(out, 's.txt'), join(ws, 'to-present'));
    assert.equal(await refusal(read(join(ws, 'to-absent'))), 'POLICY_DENIED');
    assert.equal(await refusal(read(join(ws, 'to-present'))), 'POLICY_DENIED');
    assert.equal(await refusal(read(join(ws, 'absent'))), 'NOT_FOUND');
  });

  it('reads through a hard link as the file it is, and never opens a FIFO or a device', async () => {
    linkSync(join(ws, 'b.txt'), join(ws, 'hard'));
    assert.equal(await readText(join(ws, 'hard')), 'inside');
    symlinkSync('/dev/zero', join(ws, 'zero'));
    assert.equal(await refusal(read(join(ws, 'zero'))), 'POLICY_DENIED');
    const dev = sandboxFor({ files: { read: [ws, '/dev'], write: [ws] } }).fileScope('read');
    const e = await readFile({ path: join(ws, 'zero'), scope: dev, offset: 0, byteLimit: 10 }).catch(
      (x) => x,
    );
    assert.ok(
      e instanceof GuestFailure && e.code === 'INVALID_ARGUMENT' && /not a regular file/.test(e.message),
    );
  });

  it('leaves no temporary file behind, and places the file only in the directory it judged', async () => {
    await write(join(ws, 'sub', 'one.txt'), 'a', false);
    await assert.rejects(write(join(ws, 'sub', 'one.txt'), 'b', false), (e) => codeOf(e) === 'FILE_EXISTS');
    await write(join(ws, 'sub', 'one.txt'), 'c', true);
    assert.deepEqual(readdirSync(join(ws, 'sub')).sort(), ['c.txt', 'one.txt']);
    assert.equal(readFileSync(join(ws, 'sub', 'one.txt'), 'utf8'), 'c');
    assert.equal(await refusal(write(join(ws, 'missing-dir', 'x.txt'), 'x')), 'NOT_FOUND');
    assert.equal(existsSync(join(ws, 'missing-dir')), false, 'no parent directory is made');
  });
});
