import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { declareTool } from '../tools/define.js';
import { s } from '../tools/schema.js';
import type { Tool } from '../tools/tool.js';
import { defineTool, isPluginTool, isToolSpec, type PluginTool } from './define-tool.js';
import { clip } from './upstream-text.js';

/** What `paddock servers list` (and the logs) say about one plugin module. */
export interface PluginStatus {
  /** Module name: the file name without extension (tool source `plugin:<module>`). */
  module: string;
  file: string;
  state: 'loaded' | 'failed';
  /** Names of the tools it provides (empty when failed). */
  tools: string[];
  error: string | null;
}

/** The outcome of {@link loadPlugins}: the tools of every module that loaded, and a status per module. */
export interface LoadedPlugins {
  tools: Tool[];
  plugins: PluginStatus[];
}

const EXTENSIONS = new Set(['.js', '.mjs', '.cjs', '.ts', '.mts']);

/**
 * Loads plugin modules: every `.js` / `.mjs` / `.cjs` file of a directory (e.g.
 * `.paddock/plugins/`, not recursive, names starting with `.` or `_` skipped), or the given
 * files and directories. A module exports its tools (made with `defineTool`, or plain
 * `{ name, description, input, execute }` objects) as the default export (one tool or an
 * array) and/or as named exports. A module that fails to load, exports no tool, or repeats
 * a tool name already loaded is reported (logger + status) and skipped; it never stops the
 * others. `.ts` modules load only on a Node.js that strips types natively (22.6+ with the
 * flag, 23.6+); on Node 20 they are reported with the advice to compile them to `.js`.
 * A missing directory is no plugins; a missing named file is a failed plugin.
 */
export async function loadPlugins(
  dirOrFiles: string | readonly string[],
  logger: Logger,
): Promise<LoadedPlugins> {
  const files = listModules(
    typeof dirOrFiles === 'string' ? [dirOrFiles] : dirOrFiles,
    typeof dirOrFiles !== 'string',
  );
  const tools: Tool[] = [];
  const plugins: PluginStatus[] = [];
  const taken = new Map<string, string>();
  for (const file of files) {
    const module = basename(file, extname(file));
    const status: PluginStatus = { module, file, state: 'failed', tools: [], error: null };
    plugins.push(status);
    try {
      const defs = await importTools(file);
      for (const def of defs) {
        const owner = taken.get(def.name);
        if (owner)
          throw new Error(`tool "${def.name}" is already provided by plugin ${owner}; rename one of them`);
      }
      for (const def of defs) taken.set(def.name, module);
      tools.push(...defs.map((def) => asTool(def, module)));
      status.state = 'loaded';
      status.tools = defs.map((d) => d.name);
      logger.info('plugin.loaded', { module, file, tools: status.tools });
    } catch (e) {
      status.error = clip(e instanceof Error ? e.message : String(e), 400);
      logger.error('plugin.load_failed', { module, file, error: status.error, stack: (e as Error)?.stack });
    }
  }
  return { tools, plugins };
}

function listModules(paths: readonly string[], named: boolean): string[] {
  const out: string[] = [];
  for (const p of paths) {
    const path = resolve(p);
    if (!existsSync(path)) {
      if (named) out.push(path); // reported as failed when imported
      continue;
    }
    if (!statSync(path).isDirectory()) {
      out.push(path);
      continue;
    }
    const entries = readdirSync(path, { withFileTypes: true })
      .filter(
        (d) =>
          d.isFile() && EXTENSIONS.has(extname(d.name)) && !d.name.endsWith('.d.ts') && !/^[._]/.test(d.name),
      )
      .map((d) => join(path, d.name))
      .sort();
    out.push(...entries);
  }
  return [...new Set(out)];
}

async function importTools(file: string): Promise<PluginTool[]> {
  if (!existsSync(file)) throw new Error(`file not found: ${file}; fix the path in paddock.yaml (plugins)`);
  if (/\.m?ts$/.test(file) && !(process.features as { typescript?: unknown }).typescript) {
    throw new Error(
      `${basename(file)} is TypeScript, which this Node.js (${process.version}) cannot load; ` +
        'compile it to JavaScript (e.g. `tsc`) and put the .js file in the plugins directory',
    );
  }
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const found = new Set<PluginTool>();
  const visit = (value: unknown) => {
    if (Array.isArray(value)) for (const v of value) visit(v);
    else if (isPluginTool(value)) found.add(value);
    else if (isToolSpec(value)) found.add(defineTool(value));
  };
  visit(mod.default);
  for (const [key, value] of Object.entries(mod)) if (key !== 'default') visit(value);
  const defs = [...found];
  if (defs.length === 0) {
    throw new Error(
      'the module exports no tools; export defineTool(...) results (default export or named exports)',
    );
  }
  const names = new Set<string>();
  for (const d of defs) {
    if (names.has(d.name)) throw new Error(`the module defines tool "${d.name}" twice`);
    names.add(d.name);
  }
  return defs;
}

/** Turns a plugin tool into a registry Tool whose failures are PaddockErrors naming the plugin. */
function asTool(def: PluginTool, module: string): Tool {
  return declareTool({
    name: def.name,
    ...(def.title !== undefined ? { title: def.title } : {}),
    description: def.description,
    // the plugin's zod schema, converted at its edge; `run` parses the input with zod itself
    input: s.json<Record<string, unknown>>(def.inputSchema),
    ...(def.outputSchema ? { outputSchema: def.outputSchema } : {}),
    annotations: def.annotations,
    source: `plugin:${module}`,
    toolsets: ['integrations', 'plugins'],
    async execute(input, ctx) {
      try {
        return await def.run(input, ctx);
      } catch (e) {
        if (e instanceof PaddockError) throw e;
        const message = clip(e instanceof Error ? e.message : String(e), 300);
        ctx.logger.error('plugin.failed', {
          module,
          tool: def.name,
          error: message,
          stack: (e as Error)?.stack,
        });
        throw new PaddockError(
          'INTERNAL',
          `Plugin tool "${def.name}" (plugin ${module}) failed: ${message}. The plugin has a bug or an unmet precondition; ` +
            'see the server logs, fix the plugin or the input, and retry.',
          { plugin: module },
        );
      }
    },
  });
}
