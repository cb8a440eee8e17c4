/**
 * The field schemas the guest protocol's calls and events share: stream ids and windows, guest
 * paths and file scopes, limits, error codes and who made a connection (see protocol.ts).
 */
import { z } from 'zod';

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

export const streamId = z.number().int().min(1).max(0xffffffff);
/** Credit of a relayed connection in each direction. */
export const windowBytes = z
  .number()
  .int()
  .min(1024)
  .max(16 * 1024 * 1024);
export const guestPath = z.string().min(1).max(4096);

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
export const allowedBy = z.string().max(20_000);

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
export const socketOriginSchema = z
  .object({
    pid: z.number().int().positive(),
    credentials: z
      .object({ user: z.string().max(256), password: z.string().max(256) })
      .strict()
      .nullable(),
    cgroup: z.string().max(64).nullable(),
  })
  .strict();
