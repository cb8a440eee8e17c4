/**
 * What the kernel lets a program started by the `shell` built-in do: the exec rule's helper
 * programs (besides the program itself) are all it may execute, and the `files.write` roots are
 * all it may write beneath. The decision carries this as data; the computer enforces it with
 * Landlock for the program and everything it starts (see the guest's confine.ts).
 */
import { type FileRules, findRoot, isUnder, type PathRoot } from './path-rules.js';

/** The kernel's rules for a program run by `shell` (see PolicyDecision.confine). */
export interface Confinement {
  /** Absolute paths, besides the program itself, it may execute: files, or directories for everything beneath. */
  helpers: string[];
  /** Absolute roots it may write beneath (files.write, without roots inside a files.deny root). */
  write: string[];
}

/** Nothing beyond the program itself: what an exec decision without a confinement gets. */
export const NO_CONFINEMENT: Confinement = { helpers: [], write: [] };

/**
 * The roots a confined program may write beneath: every `files.write` root that is not inside a
 * `files.deny` root. (A deny root inside a write root cannot be carved out by the kernel's
 * rules; only the file tools refuse it.)
 */
export function confinementWriteRoots(files: FileRules): string[] {
  return files.write.filter((root) => !findRoot(files.deny, root.root)).map((root) => root.root);
}

/** Roots both lists allow beneath: for each pair, the deeper one when one contains the other. */
function intersectRoots(a: readonly string[], b: readonly string[]): string[] {
  const asRoot = (root: string): PathRoot => ({ label: root, root, prefix: root === '/' ? '/' : `${root}/` });
  const out = new Set<string>();
  for (const x of a) {
    for (const y of b) {
      if (isUnder(asRoot(y), x)) out.add(x);
      else if (isUnder(asRoot(x), y)) out.add(y);
    }
  }
  return [...out];
}

/** What both of two policies allow (a missing side allows nothing beyond the program). */
export function intersectConfinements(a: Confinement | undefined, b: Confinement | undefined): Confinement {
  const x = a ?? NO_CONFINEMENT;
  const y = b ?? NO_CONFINEMENT;
  return { helpers: intersectRoots(x.helpers, y.helpers), write: intersectRoots(x.write, y.write) };
}
