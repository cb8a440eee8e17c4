/**
 * The host ↔ guest agent protocol: every control message, defined once with zod.
 *
 * Transport: frames (frames.ts) over the agent's stdin (host → guest) and stdout
 * (guest → host). Control frames carry one JSON message of this file; data frames carry raw
 * the bytes of a stream (a job, a PTY, a preview TCP connection, an egress connection: each is
 * an `op` plus a stream id, with no change to the framing).
 *
 * Trust: the host validates every message from the guest with these schemas (a process in
 * the computer may have tampered with the agent). The guest trusts its host and only
 * imports the inferred types, which keeps zod out of the agent's start-up path.
 *
 * Adding a capability: add an `op` to `callSchemas` (protocol-calls.ts) with its args and result, an event to
 * `guestEventSchema` if the guest reports something unprompted, and a handler in the agent.
 */
import { z } from 'zod';

export { PROTOCOL_VERSION } from './frames.js';
export { callSchemas } from './protocol-calls.js';
export {
  fileScopeSchema,
  type GuestErrorCode,
  guestErrorCodeSchema,
  rlimitsSchema,
} from './protocol-fields.js';

import type { TELL_OPS } from './frames.js';
import type { callSchemas } from './protocol-calls.js';
import { guestErrorCodeSchema, socketOriginSchema, streamId } from './protocol-fields.js';

export type CallOp = keyof typeof callSchemas;
export type CallArgs<Op extends CallOp> = z.infer<(typeof callSchemas)[Op]['args']>;
export type CallResult<Op extends CallOp> = z.infer<(typeof callSchemas)[Op]['result']>;

/** Host → guest: a call. */
export const hostCallSchema = z
  .object({ t: z.literal('call'), id: z.number().int().min(1), op: z.string(), args: z.unknown() })
  .strict();
export type HostCall = { t: 'call'; id: number; op: CallOp; args: unknown };

/**
 * Calls the host sends one way (`t: 'tell'`, no id): the guest runs them as it would a call
 * but sends no reply, and reports a failure as a log line. For work whose result nobody waits
 * for, where a reply would wake the host once more per request (a tool-channel reply).
 */
export type TellOp = (typeof TELL_OPS)[number];
/** Host → guest: a one-way call. */
export type HostTell = { t: 'tell'; op: TellOp; args: unknown };

export const guestErrorSchema = z
  .object({
    code: guestErrorCodeSchema,
    message: z.string().max(4096),
    details: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type GuestError = z.infer<typeof guestErrorSchema>;

/** Guest → host: the answer to one call. */
export const guestReplySchema = z.union([
  z
    .object({ t: z.literal('reply'), id: z.number().int().min(1), ok: z.literal(true), value: z.unknown() })
    .strict(),
  z
    .object({
      t: z.literal('reply'),
      id: z.number().int().min(1),
      ok: z.literal(false),
      error: guestErrorSchema,
    })
    .strict(),
]);
export type GuestReply = z.infer<typeof guestReplySchema>;

/** What the guest finds at start-up. */
export const helloSchema = z
  .object({
    t: z.literal('hello'),
    version: z.number().int(),
    pid: z.number().int().positive(),
    uid: z.number().int().min(0),
    nodeVersion: z.string().max(64),
    /** Login shell of the guest account (absolute path). */
    shell: z.string().max(256),
    /** Which well-known programs exist on the guest PATH. */
    programs: z.record(z.string(), z.boolean()),
    /** How jobs and terminals are kept apart from each other (none: one shared Landlock domain). */
    jobIsolation: z.enum(['landlock', 'none']).optional(),
    /** Whether a job can be confined to an exec rule's executables and the write roots (`exec` with `confine`). */
    confine: z.boolean().optional(),
  })
  .strict();
export type Hello = z.infer<typeof helloSchema>;

/** Guest → host: something happened without a call. */
export const guestEventSchema = z.discriminatedUnion('t', [
  helloSchema,
  /** A job's root process ended; its output streams end with their own End frames. */
  z
    .object({
      t: z.literal('exit'),
      stream: streamId,
      exitCode: z.number().int().nullable(),
      signal: z.string().max(32).nullable(),
    })
    .strict(),
  /** A tool-channel frame with the job's nonce, taken out of its stderr (the host checks the nonce). */
  z
    .object({
      t: z.literal('channel.request'),
      stream: streamId,
      nonce: z.string().max(64),
      frame: z.discriminatedUnion('kind', [
        z
          .object({
            kind: z.literal('request'),
            id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
            payload: z.string().max(1024 * 1024),
          })
          .strict(),
        z.object({ kind: z.literal('oversized'), id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) }).strict(),
        z
          .object({
            kind: z.literal('malformed'),
            id: z
              .string()
              .regex(/^[A-Za-z0-9_-]{1,64}$/)
              .nullable(),
            reason: z.string().max(256),
          })
          .strict(),
      ]),
    })
    .strict(),
  /** A PTY's process ended; its output stream ended with an End frame before this. */
  z
    .object({
      t: z.literal('pty.exit'),
      stream: streamId,
      exitCode: z.number().int().nullable(),
      signal: z.string().max(32).nullable(),
    })
    .strict(),
  /**
   * A program connected to the egress relay; its bytes flow on `stream` (an egress stream). A
   * connection to a handed-out name (`net.listen`) carries that name and port as `target` and
   * what the agent found out about the process that made it as `origin` (unchecked claims the
   * host verifies: the proxy credentials like a proxy's, the cgroup against its own jobs).
   */
  z
    .object({
      t: z.literal('egress.open'),
      stream: streamId,
      target: z
        .object({ host: z.string().min(1).max(253), port: z.number().int().min(1).max(65_535) })
        .strict()
        .optional(),
      origin: socketOriginSchema.nullable().optional(),
    })
    .strict(),
  /** A name lookup in a computer without network, refused at once; `origin` as for egress.open. */
  z
    .object({ t: z.literal('net.offline'), name: z.string().max(253), origin: socketOriginSchema.nullable() })
    .strict(),
  /** A relayed TCP connection is gone (closed by either side, or failed with `error`). */
  z.object({ t: z.literal('tcp.closed'), stream: streamId, error: z.string().max(512).nullable() }).strict(),
  /** A diagnostic line from the agent. */
  z
    .object({
      t: z.literal('log'),
      level: z.enum(['debug', 'info', 'warn', 'err']),
      message: z.string().max(4096),
    })
    .strict(),
]);
export type GuestEvent = z.infer<typeof guestEventSchema>;
/** A frame the guest took out of a job's stderr (see channel-scanner.ts), as the host receives it. */
export type ChannelFrame = Extract<GuestEvent, { t: 'channel.request' }>['frame'];

/** Everything the guest may send in a control frame. */
export const guestMessageSchema = z.union([guestReplySchema, guestEventSchema]);
export type GuestMessage = z.infer<typeof guestMessageSchema>;
