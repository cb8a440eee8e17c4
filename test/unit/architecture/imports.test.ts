/**
 * Boundaries checked, not only written: imports in src/ point down the layer order, the guest
 * agent imports no host code, no two modules or files import each other in a cycle, and no
 * barrel (a file of re-exports) lingers unused.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  fileCycles,
  guestProblems,
  importEdges,
  isBarrel,
  layerProblems,
  moduleCycles,
  parseImports,
  type SourceFile,
} from '../../helpers/import-graph.js';

/**
 * The layer order of src/, lowest first: a module may import modules of lower layers only
 * (never one of its own layer). It is ARCHITECTURE.md's module map as the code has it:
 *
 *   shared, guest ← config ← telemetry ← store ← audit ← policy ← net ← tools
 *     ← approvals, channel, integrations, agents ← computer ← mcp ← web ← main, plugin ← cli
 *
 * `guest` is the agent that runs inside the sandbox: it imports nothing of the host, and the
 * host's computer and channel speak its protocol. The dock (web) serves MCP over HTTP, so web
 * sits above mcp; the CLI starts the server, so cli sits above main. `plugin` is the public
 * entry of plugin modules (`paddock/plugin`).
 */
const LAYERS = [
  ['shared', 'guest'],
  ['config'],
  ['telemetry'],
  ['store'],
  ['audit'],
  ['policy'],
  ['net'],
  ['tools'],
  ['approvals', 'channel', 'integrations', 'agents'],
  ['computer'],
  ['mcp'],
  ['web'],
  ['main', 'plugin'],
  ['cli'],
];

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** Every .ts file under `dir` (a path from the repository root), the browser page excluded. */
function sources(dir: string): SourceFile[] {
  const out: SourceFile[] = [];
  const walk = (abs: string) => {
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      const path = join(abs, entry.name);
      const rel = relative(ROOT, path).split('\\').join('/');
      if (rel === 'src/web/ui') continue; // the dock's browser bundle (its own build)
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
        out.push({ path: rel, text: readFileSync(path, 'utf8') });
    }
  };
  walk(join(ROOT, dir));
  return out;
}

/** A synthetic file set: path → text. */
function files(map: Record<string, string>): SourceFile[] {
  return Object.entries(map).map(([path, text]) => ({ path, text }));
}

describe('module boundaries', () => {
  const src = sources('src');
  const edges = importEdges(src);

  it('reads the imports of src/ (a sanity check of the parser on the real tree)', () => {
    assert.ok(src.length > 100, `${src.length} files`);
    assert.ok(edges.length > 300, `${edges.length} imports`);
    assert.ok(edges.some((e) => e.from === 'src/main/paddock.ts' && e.to === 'src/tools/registry.ts'));
  });

  it('imports in src/ only point down the layer order', () => {
    assert.deepEqual(layerProblems(edges, LAYERS), []);
  });

  it('src/guest/ imports no host code', () => {
    assert.ok(src.some((f) => f.path === 'src/guest/agent.ts'));
    assert.deepEqual(guestProblems(edges), []);
  });

  it('no two modules import each other, directly or through others', () => {
    assert.deepEqual(moduleCycles(edges), []);
  });

  it('no two files import each other at run time, directly or through others', () => {
    assert.deepEqual(fileCycles(edges), []);
  });

  it('every barrel (a file of re-exports only) is imported by something', () => {
    const everything = [...src, ...sources('test'), ...sources('bench')];
    const used = new Set(importEdges(everything).map((e) => e.to));
    // a module loaded by URL (e.g. new URL('../../src/audit/index.js', import.meta.url))
    for (const f of everything)
      for (const m of f.text.matchAll(/['"]([./]+src\/[^'"]+\.js)['"]/g))
        used.add(`src/${m[1]!.split('src/')[1]!.replace(/\.js$/, '.ts')}`);
    // src/plugin.ts is the package's public entry for plugins (`paddock/plugin`), imported from outside
    const unused = src.filter((f) => isBarrel(f.text) && f.path !== 'src/plugin.ts' && !used.has(f.path));
    assert.deepEqual(
      unused.map((f) => f.path),
      [],
    );
  });
});

describe('the boundary checks themselves', () => {
  it('parse static, multi-line, type-only, side-effect, re-export and dynamic imports', () => {
    const refs = parseImports(
      [
        "import { a } from './a.js';",
        'import {',
        '  b,',
        '  type B,',
        "} from '../b/b.js';",
        "import type { C } from './c.js';",
        "import './d.js';",
        "export { e } from './e.js';",
        "export type { F } from './f.js';",
        "export * from './g.js';",
        "const h = await import('./h.js');",
        " * import { notReal } from './in-a-comment.js' (a JSDoc line is not an import)",
        "export const i = 'not an import';",
      ].join('\n'),
    );
    assert.deepEqual(refs, [
      { spec: './a.js', typeOnly: false },
      { spec: '../b/b.js', typeOnly: false },
      { spec: './c.js', typeOnly: true },
      { spec: './d.js', typeOnly: false },
      { spec: './e.js', typeOnly: false },
      { spec: './f.js', typeOnly: true },
      { spec: './g.js', typeOnly: false },
      { spec: './h.js', typeOnly: false },
    ]);
  });

  it('catch an upward import, a same-layer import and a module missing from the order', () => {
    const set = files({
      'src/shared/errors.ts': "import type { Tool } from '../tools/tool.js';\n",
      'src/tools/tool.ts': "import { PaddockError } from '../shared/errors.js';\n",
      'src/mcp/server.ts': "import { Gateway } from '../tools/gateway.js';\n",
      'src/tools/gateway.ts': "import { createApp } from '../web/app.js';\n",
      'src/web/app.ts': "import { createMcp } from '../mcp/server.js';\n",
      'src/channel/session.ts': "import { x } from '../agents/runner.js';\n",
      'src/agents/runner.ts': "import { y } from '../newthing/y.js';\n",
      'src/newthing/y.ts': '',
    });
    assert.deepEqual(layerProblems(importEdges(set), LAYERS), [
      'src/shared/errors.ts imports src/tools/tool.ts: shared may not import tools (a higher layer)',
      'src/tools/gateway.ts imports src/web/app.ts: tools may not import web (a higher layer)',
      'src/channel/session.ts imports src/agents/runner.ts: channel may not import agents (same layer)',
      'module "newthing" is not in the layer order; place it there',
    ]);
  });

  it('catch guest code that imports host code, even code of the lowest layer', () => {
    const set = files({
      'src/guest/agent.ts':
        "import { a } from './exec.js';\nimport { PaddockError } from '../shared/errors.js';\n",
      'src/guest/exec.ts': "import { spawn } from 'node:child_process';\n",
      'src/shared/errors.ts': '',
    });
    assert.deepEqual(guestProblems(importEdges(set)), [
      'src/guest/agent.ts imports host code src/shared/errors.ts',
    ]);
  });

  it('catch a cycle between files at run time and a cycle between modules of any import', () => {
    const set = files({
      'src/tools/a.ts': "import { b } from './b.js';\n",
      'src/tools/b.ts': "import { type C, c } from './c.js';\n",
      'src/tools/c.ts': "import { a } from './a.js';\n",
      'src/tools/d.ts': "import { a } from './a.js';\n",
      'src/net/x.ts': "import type { A } from '../tools/a.js';\n",
      'src/tools/e.ts': "import { x } from '../net/x.js';\n",
    });
    const edges = importEdges(set);
    // d and e reach the cycle but are not on it
    assert.deepEqual(fileCycles(edges), [['src/tools/a.ts', 'src/tools/b.ts', 'src/tools/c.ts']]);
    assert.deepEqual(moduleCycles(edges), [['net', 'tools']]);
    assert.deepEqual(fileCycles(importEdges(files({ 'src/tools/a.ts': "import './a.js';\n" }))), [
      ['src/tools/a.ts'],
    ]);
    // a type-only import back is erased at run time: no file cycle, still a module cycle
    const typeBack = files({
      'src/tools/p.ts': "import { q } from './q.js';\n",
      'src/tools/q.ts': "import type { P } from './p.js';\n",
    });
    assert.deepEqual(fileCycles(importEdges(typeBack)), []);
  });

  it('tell a barrel from a file with code of its own', () => {
    assert.ok(isBarrel("/** Docs. */\nexport { a } from './a.js';\nexport type {\n  B,\n} from './b.js';\n"));
    assert.ok(!isBarrel("export { a } from './a.js';\nexport function c() {}\n"));
  });
});
