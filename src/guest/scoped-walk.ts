/**
 * Resolving a guest path the way the kernel would, one component at a time, while judging every
 * step against the file roots (path-scope.ts). Nothing is ever looked up by a name the walk has
 * not checked: each component is opened relative to the directory opened before it, a symlink is
 * never followed by the kernel — its text is read and walked in turn — and the object finally
 * reached is judged by the canonical path of what was opened, at the moment it was opened.
 *
 * A symlink is followed only when it lies inside the roots; the object reached (or, for a file
 * about to be created, the place it will be created) must lie inside them too. A component that
 * is missing is refused as outside when the place it would be is outside, so the answer never
 * tells what exists beyond the roots. Magic links (`/proc/self/root`, `/proc/<pid>/cwd`,
 * `/dev/fd/N`) are read as text like any other link, never jumped through.
 *
 * The walk is written once over {@link WalkIO}: the guest agent implements it with descriptors,
 * and a backend whose guest cannot hold descriptors may implement it over canonical paths.
 */
import { GuestFailure } from './failure.js';
import { type FileScope, judgePath } from './path-scope.js';

/** Symlinks followed at most while resolving one path (Linux's MAXSYMLINKS). */
export const MAX_LINK_HOPS = 40;

/** What one component of a directory is, looked up without following it. */
export type WalkStep<D> =
  | { type: 'dir'; handle: D }
  | { type: 'file' | 'other'; handle: D }
  | { type: 'link'; target: string }
  | { type: 'missing' };

/** The filesystem operations a walk needs; `D` is an opened object (a descriptor, a path). */
export interface WalkIO<D> {
  /** Opens the root directory. */
  root(): D | Promise<D>;
  /** Looks `name` up in the directory `dir` without following a link. */
  step(dir: D, name: string): WalkStep<D> | Promise<WalkStep<D>>;
  /** Opens the physical parent of the directory `dir`. */
  parent(dir: D): D | Promise<D>;
  /** The canonical path of an opened object, as the kernel names it now. */
  where(handle: D): string | Promise<string>;
  /** Releases an opened object. */
  close(handle: D): void;
}

/** A symlink the walk followed: where it lies and what it says. */
export interface LinkHop {
  link: string;
  target: string;
}

/** An existing object the walk reached. */
export interface Reached<D> {
  handle: D;
  type: 'dir' | 'file' | 'other';
  /** Its canonical path when it was judged. */
  path: string;
  /** The rule that allowed it. */
  rule: string;
  links: LinkHop[];
}

/** Where a file is to be written: an opened directory and a name in it. */
export interface Destination<D> {
  dir: D;
  name: string;
  /** The canonical path the file will have. */
  path: string;
  rule: string;
  /** What is at the name now (a link at the name was followed: this is its target's state). */
  existing: 'missing' | 'file' | 'dir' | 'other';
  /** Whether the name as requested was a symlink (so a create-only write must refuse). */
  namedLink: boolean;
  links: LinkHop[];
}

function join(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

/** The components of a path or a link's text, without empty and `.` ones. */
function parts(text: string): string[] {
  return text.split('/').filter((p) => p !== '' && p !== '.');
}

type Walked<D> =
  | { kind: 'object'; reached: Reached<D> }
  | { kind: 'destination'; destination: Destination<D> };

/**
 * Resolves requested paths within one scope. `reach` wants an existing object (read, list; a
 * link at the end is followed); `destination` finds where a write lands (the last component may
 * be missing; a link at it is followed to its target, as `open(O_CREAT)` would).
 */
export class ScopedWalk<D> {
  constructor(
    private readonly io: WalkIO<D>,
    private readonly scope: FileScope,
  ) {}

  /** The existing object at `requested`; the caller closes its handle. */
  async reach(requested: string): Promise<Reached<D>> {
    const r = await this.walk(requested, 'existing');
    if (r.kind !== 'object') throw new Error('unreachable: an existing walk ended without an object');
    return r.reached;
  }

  /** Where a write of `requested` lands; the caller closes `dir`. */
  async destination(requested: string): Promise<Destination<D>> {
    const r = await this.walk(requested, 'create');
    if (r.kind === 'destination') return r.destination;
    // the path ended on a directory itself ("/", or ".." last in a link's text)
    this.io.close(r.reached.handle);
    throw new GuestFailure(
      'INVALID_ARGUMENT',
      `${requested} is a directory; write to a file path inside it.`,
    );
  }

  /** The rule that allows the canonical `path`, or the refusal naming the links that led there. */
  judge(requested: string, path: string, links: LinkHop[]): string {
    const verdict = judgePath(this.scope, path);
    if (verdict.allow) return verdict.rule;
    const via = links.length > 0 ? ` through ${links.map((l) => `${l.link} -> ${l.target}`).join(', ')}` : '';
    const reason = `${JSON.stringify(requested)} leads${via} to ${path}, which is ${verdict.reason}`;
    throw new GuestFailure('POLICY_DENIED', reason, { rule: verdict.rule, reason, links });
  }

  private refuseLink(requested: string, links: LinkHop[], hop: LinkHop): never {
    const verdict = judgePath(this.scope, hop.link);
    const before =
      links.length > 0 ? ` through ${links.map((l) => `${l.link} -> ${l.target}`).join(', ')}` : '';
    const reason = `${JSON.stringify(requested)} leads${before} to the link ${hop.link} -> ${hop.target}, which is ${verdict.allow ? 'refused' : verdict.reason}; a link is followed only where it lies inside the roots`;
    throw new GuestFailure('POLICY_DENIED', reason, {
      rule: verdict.rule,
      reason,
      links: [...links, hop],
    });
  }

  private async walk(requested: string, mode: 'existing' | 'create'): Promise<Walked<D>> {
    const io = this.io;
    const todo = parts(requested);
    const links: LinkHop[] = [];
    let namedLink = false;
    let dir = (await io.root()) as D;
    try {
      while (todo.length > 0) {
        const name = todo.shift() as string;
        const last = todo.length === 0;
        if (name === '..') {
          const up = (await io.parent(dir)) as D;
          io.close(dir);
          dir = up;
          continue;
        }
        const step = await io.step(dir, name);
        if (step.type === 'link') {
          const hop = { link: join(await io.where(dir), name), target: step.target };
          if (!judgePath(this.scope, hop.link).allow) this.refuseLink(requested, links, hop);
          links.push(hop);
          if (links.length > MAX_LINK_HOPS) {
            throw new GuestFailure(
              'INVALID_ARGUMENT',
              `${requested} has too many levels of symbolic links (more than ${MAX_LINK_HOPS}); fix the link or use its target path.`,
            );
          }
          if (step.target.length === 0) {
            throw new GuestFailure(
              'INVALID_ARGUMENT',
              `The symbolic link ${hop.link} is empty; fix it or use another path.`,
            );
          }
          if (last) namedLink = true;
          if (step.target.startsWith('/')) {
            const top = (await io.root()) as D;
            io.close(dir);
            dir = top;
          }
          todo.unshift(...parts(step.target));
          continue;
        }
        if (step.type === 'missing') {
          const would = join(await io.where(dir), name);
          const rule = this.judge(requested, would, links);
          if (last && mode === 'create') {
            return {
              kind: 'destination',
              destination: { dir, name, path: would, rule, existing: 'missing', namedLink, links },
            };
          }
          throw new GuestFailure(
            'NOT_FOUND',
            `${requested} does not exist in the computer (${would} is missing); check the path with list_files.`,
          );
        }
        if (step.type === 'dir' && !last) {
          io.close(dir);
          dir = step.handle;
          continue;
        }
        let path: string;
        let rule: string;
        try {
          path = await io.where(step.handle);
          rule = this.judge(requested, path, links);
        } catch (e) {
          io.close(step.handle);
          throw e;
        }
        if (!last) {
          io.close(step.handle);
          throw new GuestFailure(
            'NOT_FOUND',
            `${path} in ${requested} is not a directory; check the path with list_files.`,
          );
        }
        if (mode === 'create') {
          io.close(step.handle);
          return {
            kind: 'destination',
            destination: { dir, name, path, rule, existing: step.type, namedLink, links },
          };
        }
        io.close(dir);
        return { kind: 'object', reached: { handle: step.handle, type: step.type, path, rule, links } };
      }
      const path = await io.where(dir);
      const rule = this.judge(requested, path, links);
      return { kind: 'object', reached: { handle: dir, type: 'dir', path, rule, links } };
    } catch (e) {
      io.close(dir);
      throw e;
    }
  }
}
