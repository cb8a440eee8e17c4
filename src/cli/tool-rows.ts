/**
 * What `paddock tools list` prints: one row per tool a person at the CLI may call, in text or
 * JSON. Rows are plain data, so a listing kept in the tool catalog prints the same as a fresh one.
 */
import type { Paddock } from '../main/paddock.js';
import { OWNER } from '../shared/principal.js';
import { neutralizeControls } from '../shared/terminal-text.js';
import { describeTool } from '../tools/describe.js';
import type { CallerContext, Permission } from '../tools/tool.js';
import type { ActIo } from './acts.js';

/** One listed tool: its MCP description plus where it comes from and its permission. */
export type ToolRow = Record<string, unknown> & {
  name: string;
  description: string;
  source: string;
  toolsets: readonly string[];
  permission: Permission;
};

/** The CLI's caller context: a person at a terminal, so `ask` tools are allowed. */
export function cliCaller(timeoutMs?: number, signal?: AbortSignal): CallerContext {
  return {
    caller: 'cli',
    principal: OWNER,
    via: 'direct',
    attended: true,
    ...(timeoutMs ? { deadline: Date.now() + timeoutMs } : {}),
    ...(signal ? { signal } : {}),
  };
}

/** The tools `p` shows the CLI, as rows. */
export function toolRows(p: Paddock): ToolRow[] {
  return p.gateway.listTools(cliCaller()).map((t) => ({
    ...describeTool(t),
    name: t.name,
    description: t.description,
    source: t.source,
    toolsets: t.toolsets,
    permission: p.gateway.permissionOf(t),
  }));
}

/** Prints rows as a JSON array, or one line per tool (control sequences neutralised). */
export function printToolRows(rows: readonly ToolRow[], json: boolean, io: ActIo): void {
  const lines = json
    ? [JSON.stringify(rows, null, 2)]
    : rows.map(
        (r) =>
          `${r.name.padEnd(28)} ${r.source.padEnd(14)} ${r.permission.padEnd(5)} ${firstSentence(r.description)}`,
      );
  for (const text of lines) io.write('stdout', `${neutralizeControls(text)}\n`);
}

/** The first sentence of a description, cut to fit a terminal line. */
export function firstSentence(text: string): string {
  const s = text.split(/(?<=\.)\s/)[0] ?? text;
  return s.length > 90 ? `${s.slice(0, 87)}...` : s;
}
