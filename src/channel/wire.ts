import { z } from 'zod';
import { PaddockError } from '../shared/errors.js';

/**
 * The tool channel wire, defined once. Clients inside the computer (paddock-tool,
 * paddock_tool, the Node client) follow it:
 *
 * - request: one APC frame on the command's stderr,
 *   `ESC _ paddock;<nonce>;<id>;<base64url(JSON request)> ESC \`, where `<nonce>` is
 *   `$PADDOCK_CHANNEL` and `<id>` is 1–64 characters of `[A-Za-z0-9_-]`, unique per command;
 *   the payload may also be the JSON itself (it starts with `{`; valid JSON never holds ESC);
 * - reply: one JSON line written by the guest agent into the FIFO `$PADDOCK_CHANNEL_DIR/<id>`,
 *   which the client creates (mode 0600) and opens for reading before it sends the frame;
 * - before anything, a client compares `readlink /proc/self/fd/2` with the content of
 *   `$PADDOCK_CHANNEL_DIR/stderr`: when they differ, stderr was redirected and there is no
 *   channel (the client fails at once and says to redirect stdout instead);
 * - `$PADDOCK_CHANNEL_DEADLINE` (epoch milliseconds) bounds every wait;
 * - an id that starts with `sh-` asks for the shell form of the reply (see {@link encodeShellReply}),
 *   written into `$PADDOCK_CHANNEL_DIR-sh/f-<rest of the id>`, a FIFO the POSIX sh client claimed
 *   from its pool there, so a call starts no process.
 */
export const CHANNEL_ENV = {
  nonce: 'PADDOCK_CHANNEL',
  dir: 'PADDOCK_CHANNEL_DIR',
  deadline: 'PADDOCK_CHANNEL_DEADLINE',
} as const;

/** Name of the file in the channel directory that identifies the job's stderr. */
export const STDERR_ID_FILE = 'stderr';
/** Calls one command may make; list requests are free. */
export const MAX_CALLS_PER_COMMAND = 100;
/** Frames of any kind (lists, malformed, refused) one command may send before all are refused. */
export const MAX_FRAMES_PER_COMMAND = 10 * MAX_CALLS_PER_COMMAND;

export const channelRequestSchema = z.discriminatedUnion('op', [
  z.object({ v: z.literal(1), op: z.literal('list') }).strict(),
  z
    .object({
      v: z.literal(1),
      op: z.literal('call'),
      name: z.string().min(1).max(128),
      args: z.record(z.string(), z.unknown()),
    })
    .strict(),
]);
export type ChannelRequest = z.infer<typeof channelRequestSchema>;

/** What a client reads back (one JSON line). */
export type ChannelReply =
  | { id: string; ok: true; result: unknown }
  | { id: string; ok: false; error: { code: string; message: string } & Record<string, unknown> };

/** Decodes a frame payload; a bad one is INVALID_ARGUMENT naming the problem. */
export function decodeRequest(payload: string): ChannelRequest {
  let json: unknown;
  try {
    // a payload that starts with `{` is the JSON itself (its UTF-8 bytes as latin1), else base64
    const text = payload.startsWith('{')
      ? Buffer.from(payload, 'latin1').toString('utf8')
      : Buffer.from(payload, 'base64url').toString('utf8');
    json = JSON.parse(text);
  } catch {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'The channel request is neither JSON nor base64url-encoded JSON; use the paddock-tool client.',
    );
  }
  const parsed = channelRequestSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((i) => `${i.path.join('.') || '(request)'}: ${i.message}`)
      .join('; ');
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `The channel request is malformed (${problems}); use the paddock-tool client.`,
    );
  }
  return parsed.data;
}

/** Encodes a request payload (what clients put between the last `;` and `ESC \`). */
export function encodeRequest(request: ChannelRequest): string {
  return Buffer.from(JSON.stringify(request)).toString('base64url');
}

/** The reply line written into the client's FIFO. */
export function encodeReply(reply: ChannelReply): string {
  return `${JSON.stringify(reply)}\n`;
}

/** An id with this prefix gets its reply in the shell form (the POSIX sh client's ids). */
export { SHELL_ID_PREFIX as SHELL_REPLY_PREFIX } from '../guest/account.js';

/**
 * The reply for the shell client, read with `read` alone: a first line `ok <bytes> <lines>` or
 * `err <CODE> <lines>`, then that text (ending with a newline). For `ok` the text is what
 * `paddock-tool` prints: for a list the tools, for a call its structured result, else its text
 * parsed as JSON, else the text as a JSON string, pretty-printed. For `err` it is the message.
 */
export function encodeShellReply(reply: ChannelReply): string {
  if (!reply.ok) return shellError(reply.error.code, reply.error.message);
  const result = (reply.result ?? {}) as {
    tools?: unknown;
    structured?: unknown;
    content?: { type?: string; text?: string }[] | null;
    isError?: boolean;
  };
  let value: unknown;
  if (result.tools !== undefined) value = result.tools;
  else {
    const text = (result.content ?? [])
      .filter((b) => b?.type === 'text')
      .map((b) => b.text ?? '')
      .join('\n');
    if (result.isError) return shellError('UPSTREAM_ERROR', text || 'The tool reported an error.');
    if (result.structured !== null && result.structured !== undefined) value = result.structured;
    else {
      try {
        value = JSON.parse(text);
      } catch {
        value = text;
      }
    }
  }
  const out = `${JSON.stringify(value, null, 2)}\n`;
  return `ok ${Buffer.byteLength(out)} ${lineCount(out)}\n${out}`;
}

function shellError(code: string, message: string): string {
  const text = `${message}\n`;
  return `err ${code} ${lineCount(text)}\n${text}`;
}

function lineCount(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return n;
}
