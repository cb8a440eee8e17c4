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
 * Adding a capability: add an `op` to `callSchemas` with its args and result, an event to
 * `guestEventSchema` if the guest reports something unprompted, and a handler in the agent.
 */
import { z } from 'zod';

export { PROTOCOL_VERSION } from './frames.js';

import type { TELL_OPS } from './frames.js';

/** Error codes the guest may answer with (a subset of the host's ErrorCode). */
export const guestErrorCodeSchema = z.enum([
  'INVALID_ARGUMENT',
  'POLICY_DENIED',
  'NOT_FOUND',
  'FILE_EXISTS',
  'LIMIT_EXCEEDED',
  'UNSUPPORTED_CAPABILITY',
  'INTERNAL',
]);
export type GuestErrorCode = z.infer<typeof guestErrorCodeSchema>;

const streamId = z.number().int().min(1).max(0xffffffff);
/** Credit of a relayed connection in each direction. */
const windowBytes = z
  .number()
  .int()
  .min(1024)
  .max(16 * 1024 * 1024);
const guestPath = z.string().min(1).max(4096);

const scopeRoot = z.object({ label: z.string().max(4200), root: guestPath }).strict();
/** The file roots a file operation may touch (guest/path-scope.ts), judged in the guest. */
export const fileScopeSchema = z
  .object({
    kind: z.enum(['read', 'write']),
    sets: z
      .array(z.object({ allow: z.array(scopeRoot).max(256), deny: z.array(scopeRoot).max(256) }).strict())
      .min(1)
      .max(8),
  })
  .strict();
/** The rule that allowed a file operation (the guest's judgement, for the audit row). */
const allowedBy = z.string().max(20_000);

/** Resource limits applied to a job's processes with setrlimit (inherited by descendants). */
export const rlimitsSchema = z
  .object({
    openFiles: z.number().int().positive().optional(),
    fileSizeBytes: z.number().int().positive().optional(),
    processes: z.number().int().positive().optional(),
    dataBytes: z.number().int().positive().optional(),
  })
  .strict();

/** Who made a connection or a lookup, as the agent found it (see guest/socket-owner.ts). */
const socketOriginSchema = z
  .object({
    pid: z.number().int().positive(),
    credentials: z
      .object({ user: z.string().max(256), password: z.string().max(256) })
      .strict()
      .nullable(),
    cgroup: z.string().max(64).nullable(),
  })
  .strict();

/** Each call: its argument schema and its result schema. */
export const callSchemas = {
  /** Liveness check. */
  ping: { args: z.object({}).strict(), result: z.object({}).strict() },
  /**
   * Spawn a job. `argv` runs with stdin on /dev/null and stdout/stderr sent on `stream`.
   * With `hold`, the process waits before exec until `release`, so the host can place it in
   * its process family (cgroup) before it can fork.
   */
  exec: {
    args: z
      .object({
        stream: streamId,
        argv: z.array(z.string()).min(1),
        cwd: guestPath,
        env: z.record(z.string(), z.string()),
        rlimits: rlimitsSchema,
        hold: z.boolean(),
        /** Start in a new session (the fallback family when the host has no cgroups). */
        newSession: z.boolean(),
        /** Open `cwd` without following any symlink (it is canonical: the policy checked it). */
        strictCwd: z.boolean().optional(),
        /**
         * Open the tool channel for this job: frames with `nonce` are taken out of its stderr and
         * reported as `channel.request` events; replies go to FIFOs in `dir` (created by the agent).
         */
        toolChannel: z
          .object({ nonce: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/), dir: guestPath })
          .strict()
          .optional(),
        /**
         * Run the job in the spare shell started on this stream by `prepare` (already in its
         * family, so no `release` follows): it takes `stream`, `cwd`, `env` and `argv` and becomes
         * the job. NOT_FOUND when that shell is gone (start the job without it).
         */
        spare: streamId.optional(),
        /**
         * Run `argv` confined (the `shell` built-in): it and everything it starts may execute
         * only `execute` (with the loaders and interpreters they need, which the guest finds)
         * and write only beneath `write`. UNSUPPORTED_CAPABILITY where the guest cannot.
         */
        confine: z
          .object({ execute: z.array(guestPath).max(256), write: z.array(guestPath).max(256) })
          .strict()
          .optional(),
      })
      .strict(),
    result: z.object({ pid: z.number().int().positive() }).strict(),
  },
  /**
   * Start a spare shell on `stream`: the next job's process ahead of time (held, in a new
   * session when asked, with the jobs' rlimits), so the host can place it in a family before
   * the job exists. It exits when the agent ends; the host kills it with its family.
   */
  prepare: {
    args: z
      .object({
        stream: streamId,
        rlimits: rlimitsSchema,
        newSession: z.boolean(),
        /** The jobs' shell: a bash is started ahead as the spare itself (else the spare is `sh`). */
        shell: guestPath.optional(),
      })
      .strict(),
    result: z.object({ pid: z.number().int().positive() }).strict(),
  },
  /** Writes one reply line into the FIFO `<dir>/<id>` of a job's tool channel (dropped when nobody reads). */
  'channel.reply': {
    args: z
      .object({
        stream: streamId,
        id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
        body: z.string().max(16 * 1024 * 1024),
      })
      .strict(),
    result: z.object({ delivered: z.boolean() }).strict(),
  },
  /** Let a held job continue to exec its program. */
  release: { args: z.object({ stream: streamId }).strict(), result: z.object({}).strict() },
  /** Send a signal to a job's root (and its process group when `group`). */
  signal: {
    args: z
      .object({ stream: streamId, signal: z.enum(['SIGTERM', 'SIGKILL', 'SIGINT']), group: z.boolean() })
      .strict(),
    result: z.object({}).strict(),
  },
  /** Directory entries, sorted by name. */
  'fs.list': {
    args: z
      .object({
        path: guestPath,
        scope: fileScopeSchema,
        offset: z.number().int().min(0),
        limit: z.number().int().min(1).max(10_000),
      })
      .strict(),
    result: z
      .object({
        path: z.string(),
        rule: allowedBy,
        total: z.number().int().min(0),
        entries: z.array(
          z
            .object({
              name: z.string(),
              type: z.enum(['file', 'dir', 'symlink', 'other']),
              size: z.number().min(0),
              mtimeMs: z.number(),
              mode: z.number().int().min(0),
            })
            .strict(),
        ),
      })
      .strict(),
  },
  /**
   * Bytes of a regular file from `offset`; the bytes come as the reply's attachment. Every file
   * operation walks its path within `scope` and answers POLICY_DENIED (nothing touched) when a
   * link or the object reached lies outside it.
   */
  'fs.read': {
    args: z
      .object({
        path: guestPath,
        scope: fileScopeSchema,
        offset: z.number().int().min(0),
        byteLimit: z
          .number()
          .int()
          .min(1)
          .max(1 << 20),
      })
      .strict(),
    result: z
      .object({
        bytesRead: z.number().int().min(0),
        size: z.number().int().min(0),
        eof: z.boolean(),
        rule: allowedBy,
      })
      .strict(),
  },
  /** Create or replace a regular file with the attachment (none: empty), atomically. */
  'fs.write': {
    args: z.object({ path: guestPath, scope: fileScopeSchema, overwrite: z.boolean() }).strict(),
    result: z
      .object({ bytesWritten: z.number().int().min(0), created: z.boolean(), rule: allowedBy })
      .strict(),
  },
  /** The canonical path of a directory reached within `scope` (a job's working directory). */
  'fs.resolve': {
    args: z.object({ path: guestPath, scope: fileScopeSchema }).strict(),
    result: z.object({ path: guestPath, rule: allowedBy }).strict(),
  },
  /** The first executable `<dir>/<name>` in `searchPath`, or null (never the caller's PATH). */
  which: {
    args: z.object({ name: z.string().min(1).max(255), searchPath: z.array(guestPath).max(64) }).strict(),
    result: z.object({ path: z.string().nullable() }).strict(),
  },
  /**
   * Open a PTY running `argv` (the login shell) in a new session; its output streams on
   * `stream` (fd 1) until an End frame, then a `pty.exit` event follows.
   */
  'pty.open': {
    args: z
      .object({
        stream: streamId,
        argv: z.array(z.string()).min(1),
        cwd: guestPath,
        env: z.record(z.string(), z.string()),
        cols: z.number().int().min(2).max(1000),
        rows: z.number().int().min(1).max(500),
      })
      .strict(),
    result: z.object({ pid: z.number().int().positive() }).strict(),
  },
  /** Write the call's attachment to a PTY's input (LIMIT_EXCEEDED while too much input is unread). */
  'pty.write': { args: z.object({ stream: streamId }).strict(), result: z.object({}).strict() },
  /** Change a PTY's window size (the program gets SIGWINCH). */
  'pty.resize': {
    args: z
      .object({
        stream: streamId,
        cols: z.number().int().min(2).max(1000),
        rows: z.number().int().min(1).max(500),
      })
      .strict(),
    result: z.object({}).strict(),
  },
  /** Hang up a PTY and kill its process group. */
  'pty.close': { args: z.object({ stream: streamId }).strict(), result: z.object({}).strict() },
  /**
   * Connect to 127.0.0.1:`port` inside the guest (the preview relay). Bytes flow as data frames
   * on `stream` (host → guest fd 0, guest → host fd 1); each side may have
   * `windowBytes` unacknowledged bytes in flight and grants more with Window frames.
   */
  'tcp.open': {
    args: z
      .object({
        stream: streamId,
        port: z.number().int().min(1).max(65_535),
        windowBytes,
      })
      .strict(),
    result: z.object({}).strict(),
  },
  /** Drop a relayed TCP connection at once. */
  'tcp.close': { args: z.object({ stream: streamId }).strict(), result: z.object({}).strict() },
  /**
   * Listen on 127.0.0.1:`port` inside the guest (the egress relay): every connection a program
   * opens there becomes a stream announced by an `egress.open` event, relayed like `tcp.open`'s
   * (guest → host stream 1, host → guest stream 0, `windowBytes` of credit each way).
   */
  'egress.listen': {
    args: z
      .object({
        port: z.number().int().min(1).max(65_535),
        windowBytes,
      })
      .strict(),
    result: z.object({}).strict(),
  },
  /**
   * Serve DNS on `resolver` port 53 (UDP and TCP; /etc/resolv.conf names it). With `names`, every
   * host name gets an address of its own on lo with listeners on `ports`; a connection there is
   * an `egress.open` with its target. Without, every lookup is refused at once and reported as
   * a `net.offline` event (the computer has no network).
   */
  'net.listen': {
    args: z
      .object({
        resolver: z.string().regex(/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/),
        names: z
          .object({ ports: z.array(z.number().int().min(1).max(65_535)).max(64) })
          .strict()
          .nullable(),
        windowBytes,
      })
      .strict(),
    result: z.object({}).strict(),
  },
  /** Listen on more ports for every handed-out name (the policy was reloaded). */
  'net.ports': {
    args: z.object({ ports: z.array(z.number().int().min(1).max(65_535)).max(64) }).strict(),
    result: z.object({}).strict(),
  },
} as const;

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
