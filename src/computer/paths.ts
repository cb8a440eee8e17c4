/**
 * Lexical rules for guest paths given by a caller: absolute, no NUL, no backslash, no empty,
 * `.` or `..` segments. The policy's roots and symlink resolution come on top (in the tools).
 */
import { PaddockError } from '../shared/errors.js';

/** Checks a guest path and returns it unchanged; INVALID_ARGUMENT says what to fix. */
export function checkGuestPath(path: string, what = 'path'): string {
  const bad = (why: string) =>
    new PaddockError(
      'INVALID_ARGUMENT',
      `The ${what} "${path.slice(0, 200)}" ${why}; pass an absolute guest path such as /workspace/notes.txt.`,
    );
  if (path.length === 0) throw bad('is empty');
  if (path.length > 1024) throw bad('is longer than 1024 characters');
  if (path.includes('\0')) throw bad('contains a NUL character');
  if (path.includes('\\')) throw bad('contains a backslash');
  if (!path.startsWith('/')) throw bad('is not absolute');
  if (path === '/') return path;
  const segments = path.slice(1).split('/');
  if (segments.some((s) => s === '')) throw bad('has an empty segment (a doubled or trailing "/")');
  if (segments.some((s) => s === '.' || s === '..')) throw bad('has a "." or ".." segment');
  return path;
}
