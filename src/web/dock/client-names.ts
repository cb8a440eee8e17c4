/**
 * Names a person reads for callers and computers: the MCP client's own name (what it sent as
 * `clientInfo` when it connected) instead of `mcp:543f62e2-…`, and a computer labelled by whom it
 * belongs to instead of `private:mcp:<uuid>`. Display only: who a caller is stays its caller id.
 */

/** The open MCP sessions as the server lists them (`paddock status` shows the same). */
export type SessionNames = () => readonly { id: string; client?: string | undefined }[];

/** Names of clients seen while they were connected, kept for their rows and computers afterwards. */
export class ClientNames {
  private readonly remembered = new Map<string, string>();

  constructor(
    private readonly sessions: SessionNames,
    private readonly max = 500,
  ) {}

  /** The client name behind `mcp:<session>` (null for other callers or an unnamed client). */
  nameOf(caller: string): string | null {
    if (!caller.startsWith('mcp:')) return null;
    const id = caller.slice('mcp:'.length);
    const live = this.sessions().find((s) => s.id === id)?.client;
    if (!live) return this.remembered.get(caller) ?? null;
    this.remembered.delete(caller);
    this.remembered.set(caller, live);
    while (this.remembered.size > this.max) {
      const oldest = this.remembered.keys().next().value;
      if (oldest === undefined) break;
      this.remembered.delete(oldest);
    }
    return live;
  }
}

/** `#543f`: tells two sessions of the same client apart. */
function tag(id: string): string {
  return `#${id.replace(/[^0-9a-z]/gi, '').slice(0, 4)}`;
}

/** What a person calls a caller: the client's name and a short tag, else a plain word. */
export function callerLabel(caller: string, nameOf: (caller: string) => string | null): string {
  const colon = caller.indexOf(':');
  const kind = colon < 0 ? caller : caller.slice(0, colon);
  const rest = colon < 0 ? '' : caller.slice(colon + 1);
  switch (kind) {
    case 'mcp':
      return `${nameOf(caller) ?? 'MCP client'} ${tag(rest)}`;
    case 'dock':
      return rest ? `you (dock, ${rest})` : 'you (dock)';
    case 'cli':
      return 'CLI';
    case 'agent':
      return `agent run ${tag(rest.replace(/^run_/, ''))}`;
    case 'channel':
      return `script in ${rest || 'a job'}`;
    default:
      return caller;
  }
}

/** What a person calls a computer of the switcher (`named:<name>` or `private:<owner>`). */
export function computerLabel(name: string, nameOf: (caller: string) => string | null): string {
  if (name.startsWith('named:')) return name.slice('named:'.length);
  if (!name.startsWith('private:')) return name;
  const owner = name.slice('private:'.length);
  if (owner === 'dock') return 'the dock’s computer';
  return `${callerLabel(owner, nameOf)}’s computer`;
}
