/**
 * The import graph of a set of TypeScript source files, and the checks the architecture test
 * runs on it: imports point down the layer order only, the guest agent imports no host code,
 * and there are no cycles between modules or between files. Pure functions over in-memory
 * files, so a test can prove each check catches a wrong import.
 */
import { posix } from 'node:path';

/** One source file: its path from the repository root (`src/tools/gateway.ts`) and its text. */
export interface SourceFile {
  path: string;
  text: string;
}

/** One import of a file: the specifier as written, and whether only types are imported. */
export interface ImportRef {
  spec: string;
  typeOnly: boolean;
}

/** An import between two files of the set. */
export interface ImportEdge {
  from: string;
  to: string;
  typeOnly: boolean;
}

/** Static imports and re-exports (`import … from`, `import '…'`, `export … from`), and `import('…')`. */
const STATIC =
  /^[ \t]*(?:import|export)[ \t]+(type[ \t]+)?(?:[^;'"]*?[ \t\n]from[ \t]+)?['"]([^'"\n]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"\n]+)['"]\s*\)/g;

/** The imports of one file, in order of appearance (static ones first). */
export function parseImports(text: string): ImportRef[] {
  const refs: ImportRef[] = [];
  for (const m of text.matchAll(STATIC)) refs.push({ spec: m[2]!, typeOnly: m[1] !== undefined });
  for (const m of text.matchAll(DYNAMIC)) refs.push({ spec: m[1]!, typeOnly: false });
  return refs;
}

/** The imports between files of the set (relative specifiers; `.js` names its `.ts` source). */
export function importEdges(files: readonly SourceFile[]): ImportEdge[] {
  const known = new Set(files.map((f) => f.path));
  const edges: ImportEdge[] = [];
  for (const file of files) {
    for (const ref of parseImports(file.text)) {
      if (!ref.spec.startsWith('.')) continue;
      const target = posix.join(posix.dirname(file.path), ref.spec).replace(/\.js$/, '.ts');
      if (known.has(target)) edges.push({ from: file.path, to: target, typeOnly: ref.typeOnly });
    }
  }
  return edges;
}

/** The module of a file under `src/`: its top-level folder, or the file's name for `src/main.ts`. */
export function moduleOf(path: string): string {
  const rest = path.replace(/^src\//, '');
  const slash = rest.indexOf('/');
  return slash < 0 ? rest.replace(/\.ts$/, '') : rest.slice(0, slash);
}

/**
 * Imports that do not point down the layer order: a module may import its own files and the
 * modules of lower layers, never a module of its own layer or of a higher one. A module missing
 * from the order is a problem too (a new module must be placed).
 */
export function layerProblems(
  edges: readonly ImportEdge[],
  layers: readonly (readonly string[])[],
): string[] {
  const rank = new Map<string, number>();
  layers.forEach((names, i) => {
    for (const name of names) rank.set(name, i);
  });
  const problems = new Set<string>();
  for (const edge of edges) {
    const from = moduleOf(edge.from);
    const to = moduleOf(edge.to);
    if (from === to) continue;
    for (const name of [from, to]) {
      if (!rank.has(name)) problems.add(`module "${name}" is not in the layer order; place it there`);
    }
    const a = rank.get(from);
    const b = rank.get(to);
    if (a === undefined || b === undefined) continue;
    if (b >= a) {
      problems.add(
        `${edge.from} imports ${edge.to}: ${from} may not import ${to} (${b === a ? 'same layer' : 'a higher layer'})`,
      );
    }
  }
  return [...problems];
}

/** Imports from `src/guest/` of files outside it: the guest agent runs alone inside the sandbox. */
export function guestProblems(edges: readonly ImportEdge[]): string[] {
  return edges
    .filter((e) => e.from.startsWith('src/guest/') && !e.to.startsWith('src/guest/'))
    .map((e) => `${e.from} imports host code ${e.to}`);
}

/** Every cycle of a directed graph, as its members (strongly connected components of two or more, and self-loops). */
export function cyclesOf(edges: readonly { from: string; to: string }[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) {
    if (!next.has(from)) next.set(from, []);
    if (!next.has(to)) next.set(to, []);
    next.get(from)!.push(to);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let counter = 0;
  // Tarjan's algorithm, iterative so that a deep graph cannot overflow the call stack
  for (const root of next.keys()) {
    if (index.has(root)) continue;
    const work: { node: string; child: number }[] = [{ node: root, child: 0 }];
    index.set(root, counter);
    low.set(root, counter++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const children = next.get(frame.node)!;
      if (frame.child < children.length) {
        const child = children[frame.child++]!;
        if (!index.has(child)) {
          index.set(child, counter);
          low.set(child, counter++);
          stack.push(child);
          onStack.add(child);
          work.push({ node: child, child: 0 });
        } else if (onStack.has(child)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(child)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const members: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        members.push(member);
      } while (member !== frame.node);
      if (members.length > 1 || children.includes(frame.node)) found.push(members.sort());
    }
  }
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** Cycles between modules (the folders of `src/`). */
export function moduleCycles(edges: readonly ImportEdge[]): string[][] {
  return cyclesOf(
    edges.map((e) => ({ from: moduleOf(e.from), to: moduleOf(e.to) })).filter((e) => e.from !== e.to),
  );
}

/**
 * Cycles between files through imports that exist at run time. A type-only import is erased by
 * the compiler and cannot change the order modules evaluate in, so it does not count here (as in
 * the usual lint rule); module cycles count every import.
 */
export function fileCycles(edges: readonly ImportEdge[]): string[][] {
  return cyclesOf(edges.filter((e) => !e.typeOnly));
}

/** True for a file made only of re-exports (`export … from`), comments and blank lines: a barrel. */
export function isBarrel(text: string): boolean {
  const code = text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '')
    .replace(/^[ \t]*export[ \t]+(?:type[ \t]+)?(?:\*|\{[^}]*\})[ \t]*from[ \t]+['"][^'"]+['"];?/gm, '');
  return code.trim() === '';
}
