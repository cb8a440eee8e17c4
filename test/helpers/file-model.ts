/**
 * A reference model of a computer's filesystem for the file tools' differential test: a tree of
 * directories, files, links and special entries, seeded random layouts and requests, and what
 * each file tool should do by the rule the tools promise — resolve the path as the kernel would,
 * follow a symlink only where it lies inside the roots, and act only on what lies inside them.
 *
 * The model is written apart from the guest's walk (src/guest/scoped-walk.ts): a recursive
 * resolver over a map of entries, so a check the implementation skips shows as a difference.
 */

/** One entry of the model's tree. */
export type ModelNode =
  | { kind: 'dir' }
  | { kind: 'file'; content: string }
  | { kind: 'link'; target: string }
  | { kind: 'other' };

/** File roots as the policy config gives them. */
export interface ModelRoots {
  read: string[];
  write: string[];
  deny: string[];
}

/** What a request should come to. */
export type Expected =
  | { code: 'ok'; path: string; node: ModelNode }
  | { code: 'create'; path: string; existing: ModelNode | null; namedLink: boolean }
  | { code: 'POLICY_DENIED' | 'NOT_FOUND' | 'INVALID_ARGUMENT' };

const MAX_HOPS = 40;

function join(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

function parentOf(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

function under(root: string, path: string): boolean {
  return root === '/' || path === root || path.startsWith(`${root}/`);
}

/** Whether a canonical path may be touched for `kind`. */
export function permitted(roots: ModelRoots, kind: 'read' | 'write', path: string): boolean {
  if (roots.deny.some((r) => under(r, path))) return false;
  return roots[kind].some((r) => under(r, path));
}

/** The model's tree: entries by the canonical path where they lie. */
export class ModelTree {
  readonly nodes = new Map<string, ModelNode>([['/', { kind: 'dir' }]]);

  set(path: string, node: ModelNode): void {
    this.nodes.set(path, node);
  }

  children(dir: string): string[] {
    const prefix = dir === '/' ? '/' : `${dir}/`;
    const names: string[] = [];
    for (const p of this.nodes.keys()) {
      if (p !== '/' && p.startsWith(prefix) && !p.slice(prefix.length).includes('/'))
        names.push(p.slice(prefix.length));
    }
    return names.sort();
  }

  /**
   * Resolves `path` within `roots`. `create`: the last component may be missing, and a link at
   * it is followed to where a file would be created.
   */
  resolve(roots: ModelRoots, kind: 'read' | 'write', path: string, create: boolean): Expected {
    const state = { hops: 0, namedLink: false };
    const parts = path.split('/').filter((p) => p !== '' && p !== '.');
    const r = this.follow(roots, kind, '/', parts, create, state);
    if (r.code === 'create') return { ...r, namedLink: state.namedLink };
    return r;
  }

  private follow(
    roots: ModelRoots,
    kind: 'read' | 'write',
    dir: string,
    parts: string[],
    create: boolean,
    state: { hops: number; namedLink: boolean },
  ): Expected {
    if (parts.length === 0) {
      return permitted(roots, kind, dir)
        ? { code: 'ok', path: dir, node: { kind: 'dir' } }
        : { code: 'POLICY_DENIED' };
    }
    const [name, ...rest] = parts as [string, ...string[]];
    if (name === '..') return this.follow(roots, kind, parentOf(dir), rest, create, state);
    const here = join(dir, name);
    const node = this.nodes.get(here);
    if (node?.kind === 'link') {
      if (!permitted(roots, kind, here)) return { code: 'POLICY_DENIED' };
      state.hops++;
      if (state.hops > MAX_HOPS) return { code: 'INVALID_ARGUMENT' };
      if (node.target === '') return { code: 'INVALID_ARGUMENT' };
      if (rest.length === 0) state.namedLink = true;
      const start = node.target.startsWith('/') ? '/' : dir;
      const more = node.target.split('/').filter((p) => p !== '' && p !== '.');
      return this.follow(roots, kind, start, [...more, ...rest], create, state);
    }
    if (!node) {
      if (!permitted(roots, kind, here)) return { code: 'POLICY_DENIED' };
      if (rest.length === 0 && create)
        return { code: 'create', path: here, existing: null, namedLink: false };
      return { code: 'NOT_FOUND' };
    }
    if (rest.length > 0 && node.kind !== 'dir') {
      return permitted(roots, kind, here) ? { code: 'NOT_FOUND' } : { code: 'POLICY_DENIED' };
    }
    if (rest.length > 0) return this.follow(roots, kind, here, rest, create, state);
    if (!permitted(roots, kind, here)) return { code: 'POLICY_DENIED' };
    if (create) return { code: 'create', path: here, existing: node, namedLink: false };
    return { code: 'ok', path: here, node };
  }

  /** The lines `dumpScript` prints for the entries under `areas`, sorted. */
  dump(areas: string[]): string[] {
    const lines: string[] = [];
    for (const [p, node] of this.nodes) {
      if (!areas.some((a) => p.startsWith(`${a}/`))) continue;
      if (node.kind === 'dir') lines.push(`d ${p}`);
      else if (node.kind === 'link') lines.push(`l ${p} ${node.target}`);
      else if (node.kind === 'file') lines.push(`f ${p} ${node.content}`);
    }
    return lines.sort();
  }
}

/** A shell script that prints every entry under `areas` as `dump` does (names are [a-z0-9]). */
export function dumpScript(areas: string[]): string {
  return [
    `find ${areas.join(' ')} -mindepth 1 | while IFS= read -r p; do`,
    '  if [ -L "$p" ]; then printf \'l %s %s\\n\' "$p" "$(readlink "$p")";',
    '  elif [ -d "$p" ]; then printf \'d %s\\n\' "$p";',
    '  else printf \'f %s %s\\n\' "$p" "$(cat "$p")"; fi',
    'done',
  ].join('\n');
}

/** A seeded random layout: the model and the script that builds it in a computer. */
export function randomLayout(
  rnd: () => number,
  areas: string[],
  system: Record<string, ModelNode>,
): { tree: ModelTree; script: string } {
  const tree = new ModelTree();
  for (const [p, node] of Object.entries(system)) tree.set(p, node);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const name = () => `${pick(['a', 'b', 'c', 'd', 'e', 'f', 'g'])}${Math.floor(rnd() * 5)}`;
  const lines = ['set -e'];
  const dirs: string[] = [];
  for (const area of areas) {
    tree.set(area, { kind: 'dir' });
    dirs.push(area);
    lines.push(`mkdir -p ${area}`);
  }
  for (let i = 0; i < 14; i++) {
    const at = join(pick(dirs), name());
    if (tree.nodes.has(at)) continue;
    tree.set(at, { kind: 'dir' });
    dirs.push(at);
    lines.push(`mkdir ${at}`);
  }
  for (let i = 0; i < 30; i++) {
    const at = join(pick(dirs), name());
    if (tree.nodes.has(at)) continue;
    tree.set(at, { kind: 'file', content: at });
    lines.push(`printf %s ${at} > ${at}`);
  }
  const existing = () => pick([...tree.nodes.keys()]);
  const relative = (from: string, to: string) => {
    const a = from.split('/').filter(Boolean);
    const b = to.split('/').filter(Boolean);
    let common = 0;
    while (common < a.length && common < b.length && a[common] === b[common]) common++;
    const up = a.slice(common).map(() => '..');
    return [...up, ...b.slice(common)].join('/') || '.';
  };
  for (let i = 0; i < 40; i++) {
    const dir = pick(dirs);
    const at = join(dir, name());
    if (tree.nodes.has(at)) continue;
    let target: string;
    switch (Math.floor(rnd() * 10)) {
      case 0:
        target = existing();
        break;
      case 1:
        target = join(pick(dirs), name()); // often dangling
        break;
      case 2:
        target = relative(dir, existing());
        break;
      case 3:
        target = `${relative(dir, pick(dirs))}/../${name()}`;
        break;
      case 4:
        target = pick([...tree.nodes.keys()].filter((p) => tree.nodes.get(p)?.kind === 'link').concat(at));
        break;
      case 5:
        target = `/var/tmp/${existing().replace(/^\/tmp\/?/, '')}`;
        break;
      case 6:
        target = pick(['/proc/self/root/workspace', '/proc/1/cwd', '/dev/fd/0', '/etc/passwd', '/dev/null']);
        break;
      case 7:
        target = `/proc/self/root${existing()}`;
        break;
      case 8:
        target = `${relative(dir, pick(dirs))}/`;
        break;
      default:
        target = name();
    }
    tree.set(at, { kind: 'link', target });
    lines.push(`ln -s '${target}' ${at}`);
  }
  return { tree, script: lines.join('\n') };
}

/** A random request path: mostly through the layout's names, sometimes through missing ones. */
export function randomPath(rnd: () => number, tree: ModelTree, starts: string[]): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const everywhere: ModelRoots = { read: ['/'], write: ['/'], deny: [] };
  let path = pick(starts);
  const depth = 1 + Math.floor(rnd() * 4);
  for (let i = 0; i < depth; i++) {
    // the names to go on with: those of the directory the path leads to (through links too)
    const led = tree.resolve(everywhere, 'read', path, false);
    const names = led.code === 'ok' && led.node.kind === 'dir' ? tree.children(led.path) : [];
    const n = names.length > 0 && rnd() < 0.85 ? pick(names) : `n${Math.floor(rnd() * 3)}`;
    path = join(path, n);
    if (rnd() < 0.25) break;
  }
  return path;
}
