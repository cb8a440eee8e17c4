/**
 * WebMCP requests of a page: `webmcp.list` sends the computer tools to register in the browser,
 * `webmcp.call` runs one through the gateway and answers with a `webmcp.result`. Calls of a page
 * are bounded, and a page that goes away aborts the calls it still waits for.
 */
import { PaddockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { DockConnection } from './actions.js';
import { type ClientMessage, MAX_WEBMCP_CALLS_IN_FLIGHT } from './protocol.js';
import type { DockTools } from './sources.js';

export type WebMcpMessage = Extract<ClientMessage, { type: 'webmcp.list' | 'webmcp.call' }>;

/** Performs one WebMCP request of a page; the text of its `reply`. */
export function webMcpActionOf(tools: DockTools | null | undefined, logger: Logger) {
  return (conn: DockConnection, message: WebMcpMessage): string => {
    if (!tools)
      throw new PaddockError('UNSUPPORTED_CAPABILITY', 'This server offers no computer tools to the page.');
    if (message.type === 'webmcp.list') {
      conn.client.send({ type: 'webmcp.tools', tools: tools.list() });
      return 'Listed.';
    }
    const { callId, name } = message;
    if (conn.calls.has(callId))
      throw new PaddockError('INVALID_ARGUMENT', `A call "${callId}" is already waiting; use a new call id.`);
    if (conn.calls.size >= MAX_WEBMCP_CALLS_IN_FLIGHT) {
      throw new PaddockError(
        'LIMIT_EXCEEDED',
        `${MAX_WEBMCP_CALLS_IN_FLIGHT} tool calls of this page are already waiting; wait for one to finish.`,
      );
    }
    const abort = new AbortController();
    conn.calls.set(callId, abort);
    void tools
      .call(name, message.arguments, abort.signal)
      .catch((e: unknown) => {
        logger.error('dock.webmcp_failed', { tool: name, error: (e as Error).message });
        const error = new PaddockError('INTERNAL', 'The call failed inside the server; see its log.');
        return { isError: true, content: [{ type: 'text', text: JSON.stringify(error.toJSON()) }] };
      })
      .then((result) => {
        conn.calls.delete(callId);
        if (!abort.signal.aborted) conn.client.send({ type: 'webmcp.result', callId, result });
      });
    return `Calling ${name}.`;
  };
}
