import { z } from 'zod';
import { PaddockError } from '../shared/errors.js';

/**
 * The tool channel wire, defined once. Clients inside the computer (paddock-tool,
 * paddock_tool, the Node client) follow it:
 *
 * - request: one APC frame on the command's stderr,
 *   `ESC _ paddock;<nonce>;<id>;<base64url(JSON request)> ESC \`, where `<nonce>` is
 *   `$PADDOCK_CHANNEL` and `<id>` is 1–64 characters of `[A-Za-z0-9_-]`, unique per command;
 * - reply: one JSON line written by the guest agent into the FIFO `$PADDOCK_CHANNEL_DIR/<id>`,
 *   which the client creates (mode 0600) and opens for reading before it sends the frame;
 * - before anything, a client compares `readlink /proc/self/fd/2` with the content of
 *   `$PADDOCK_CHANNEL_DIR/stderr`: when they differ, stderr was redirected and there is no
 *   channel (the client fails at once and says to redirect stdout instead);
 * - `$PADDOCK_CHANNEL_DEADLINE` (epoch milliseconds) bounds every wait.
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
    json = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'The channel request is not base64url-encoded JSON; use the paddock-tool client.',
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
