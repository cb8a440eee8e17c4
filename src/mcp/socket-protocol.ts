/**
 * The opening of a connection to the server's unix socket: one JSON line from the client
 * (`SocketHello`), one JSON line back (`SocketReply`). After a welcome to `mcp`, the connection
 * carries MCP as newline-delimited JSON-RPC, one session for as long as it stays open; the other
 * operations answer once and close. Types only, so the bridge loads nothing for them.
 */
import type { ConfigIdentity } from './instance.js';

/** Operations of the socket: an MCP session, or a one-shot request of the CLI. */
export type SocketOp = 'mcp' | 'status' | 'stop' | 'open' | 'approvals' | 'computers' | 'clients' | 'cli';

/** Largest opening line a client may send. */
export const MAX_HELLO_BYTES = 64 * 1024;

export interface SocketHello {
  paddock: 1;
  op: SocketOp;
  /** The `key` of server.json: proof that the client can read the server's run directory. */
  key: string;
  /** The configuration the client would load (an `mcp` session is refused when it differs). */
  config?: ConfigIdentity;
  /** `mcp`: attach to this named computer instead of the session's private one. */
  computer?: string;
  /** `mcp`: tool sets of this session (the server's `mcp.toolsets` when absent). */
  toolsets?: string[];
  /** `approvals`: the request (list, show, approve, deny, rules, remove-rule), checked by the server. */
  approvals?: Record<string, unknown>;
  /** `computers`: `{action: list}`, `{action: stop | rm, name}`. */
  computers?: Record<string, unknown>;
  /** `clients`: `{action: revoke, id}`. */
  clients?: Record<string, unknown>;
  /** `cli`: the acting CLI command to run inside the server (see src/cli/acts.ts). */
  cli?: Record<string, unknown>;
}

/** The server's answer to the opening line. */
export type SocketReply =
  | ({ paddock: 1; ok: true } & Record<string, unknown>)
  | { paddock: 1; ok: false; code: string; message: string };

/** One MCP session as `paddock status` lists it. */
export interface SessionSummary {
  id: string;
  transport: 'socket' | 'http';
  /** `private` or the name of the shared computer the session acts on. */
  computer: string;
  openedAt: string;
  client?: string;
  /** Whose session it is: `owner` or `client:<id>` (see src/shared/principal.ts). */
  principal?: string;
  /** The principal as a person reads it: `owner`, or the OAuth client's registered name. */
  principalName?: string;
}

/** Why a `cli` command failed in the server, for the CLI to print as it would have itself. */
export interface CliErrorFrame {
  code: string;
  message: string;
  /** A command-line mistake (exit 2) rather than a failed operation (exit 1). */
  usage: boolean;
  /** Not a PaddockError: a defect, printed as an unexpected error. */
  unexpected?: boolean;
}

/** One line the server streams on a `cli` connection after its welcome. */
export type CliFrame = { stdout?: string; stderr?: string; exit?: number; error?: CliErrorFrame };
