/**
 * The guest protocol's calls: each operation's argument and result schemas (see protocol.ts for
 * the transport, the trust and how to add one).
 */
import { z } from 'zod';
import {
  allowedBy,
  fileScopeSchema,
  guestPath,
  rlimitsSchema,
  streamId,
  windowBytes,
} from './protocol-fields.js';

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
