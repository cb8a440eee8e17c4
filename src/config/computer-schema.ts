import { z } from 'zod';
import { imageSchema } from './image-schema.js';

const guestPath = z
  .string()
  .regex(
    /^\/(?:[^/\0\\]+(?:\/[^/\0\\]+)*)?$/,
    'must be an absolute path without empty segments or backslashes',
  )
  .refine((p) => !p.split('/').some((s) => s === '.' || s === '..'), 'must not contain "." or ".." segments');

/** A host path shown inside the computer. */
export const mountSchema = z
  .object({
    source: z
      .string()
      .startsWith('/')
      .describe('Absolute host path to expose (never the data directory, a socket or a secret).'),
    target: guestPath.describe('Absolute guest path where it appears.'),
    readOnly: z.boolean().default(true).describe('Read-only inside the computer (default true).'),
  })
  .strict();

/** Resource limits of a computer. */
export const limitsSchema = z
  .object({
    processes: z
      .number()
      .int()
      .min(16)
      .max(65_536)
      .default(512)
      .describe('Processes of the whole computer; one job may use all but a reserve.'),
    memoryMb: z
      .number()
      .int()
      .min(64)
      .max(1_048_576)
      .default(2048)
      .describe('Memory of the whole computer in MiB; one job may use all but a reserve.'),
    diskMb: z
      .number()
      .int()
      .min(1)
      .max(1_048_576)
      .default(4096)
      .describe(
        'Disk of the computer in MiB: /workspace and /tmp together, enforced by a disk of its own when Paddock runs as root (else /tmp and single files only); also the largest file a job may write.',
      ),
    openFiles: z.number().int().min(64).max(1_048_576).default(4096).describe('Open files per process.'),
    outputBytes: z
      .number()
      .int()
      .min(4096)
      .max(256 * 1024 * 1024)
      .optional()
      .describe('Output retained per job stream, in bytes (default: computer.retentionBytes).'),
  })
  .strict();

/** The network of a computer. */
export const networkSchema = z
  .object({
    mode: z
      .enum(['none', 'proxy'])
      .default('none')
      .describe(
        '"none": loopback only. "proxy": egress through the host proxy, decided by policy.http for every connection.',
      ),
    allow: z
      .array(z.string().min(1))
      .optional()
      .describe(
        'Narrows policy.http.allow for this profile (same rule syntax); absent: policy.http alone decides.',
      ),
  })
  .strict();

/** How many warm sandboxes a profile keeps (each holds the profile's memory while it waits). */
const warmSchema = z.number().int().min(0).max(16);

/** Whether a computer's /workspace starts empty at every launch or is kept. */
const workspaceModeSchema = z.enum(['keep', 'fresh']);

/** Settings of one named computer (shared by the sessions naming it). */
export const namedComputerSchema = z
  .object({
    workspace: workspaceModeSchema
      .optional()
      .describe("Overrides the profile's workspace mode for this computer (keep or fresh)."),
  })
  .strict();

/** One computer profile (as written; see profileSchema for the parsed form). */
const profileInputSchema = z
  .object({
    id: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'lower-case letters, digits, "-" and "_"')
      .describe('Stable id used by launch_computer and launch links.'),
    name: z.string().min(1).max(128).describe('Display name.'),
    toolChannel: z
      .boolean()
      .optional()
      .describe(
        "Let commands in this profile call the caller's tools with paddock-tool (default: computer.toolChannel).",
      ),
    backend: z
      .enum(['bwrap', 'browser'])
      .optional()
      .describe(
        'Where its computers run: the server\'s backend (default), or "browser": an x86 emulator in the dock tab that launched it (docs/browser-computer.md).',
      ),
    description: z
      .string()
      .max(2000)
      .default('')
      .describe('What the profile is for (searched by list_profiles).'),
    mounts: z.array(mountSchema).default([]).describe('Extra host paths shown inside the computer.'),
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string().max(8192))
      .default({})
      .describe('Environment of every job.'),
    limits: limitsSchema.default(limitsSchema.parse({})).describe('Resource limits.'),
    startupScript: z
      .string()
      .max(2 * 1024 * 1024)
      .optional()
      .describe('Script run as a job after every boot of this profile.'),
    networkMode: z.enum(['none', 'proxy']).optional().describe('Short form of network.mode.'),
    network: networkSchema
      .optional()
      .describe('Egress of the computer: none (loopback only, the default) or through the host proxy.'),
    previewPort: z
      .number()
      .int()
      .min(1)
      .max(65_535)
      .optional()
      .describe(
        'Port of the web preview inside the computer (default 8000; computer.previewPort overrides it).',
      ),
    requires: z
      .array(z.string().min(1))
      .default([])
      .describe('Programs that must exist for the profile to be available.'),
    workspace: workspaceModeSchema
      .default('fresh')
      .describe(
        '"fresh": every launch starts with an empty /workspace. "keep": /workspace survives relaunches and server restarts.',
      ),
    warm: warmSchema
      .default(0)
      .describe(
        'Sandboxes of this profile kept booted and unused, so a launch of a fresh-workspace computer takes one instead of booting (0: none).',
      ),
    image: imageSchema
      .optional()
      .describe(
        "The computer's own system: { debian: { suite, packages } }, { oci: { archive } }, { oci: { ref } } or { name }. Each computer writes over it in a layer of its own; absent: the host's directories, read-only.",
      ),
    user: z
      .enum(['guest', 'root'])
      .default('guest')
      .describe(
        'Who jobs and terminals run as: "guest" (uid 1000, the default) or "root" of the computer (needs an image; mapped to an unprivileged host uid), so apt-get, pip and npm install -g work.',
      ),
  })
  .strict();

/**
 * One computer profile. `networkMode` is the short form of `network.mode`; after parsing both
 * are set and agree (giving both with different values is an error).
 */
export const profileSchema = profileInputSchema
  .superRefine((p, ctx) => {
    if (p.backend === 'browser') {
      const unsupported: Array<[boolean, string, string]> = [
        [p.mounts.length > 0, 'mounts', 'a browser computer cannot see host paths; remove mounts'],
        [p.warm > 0, 'warm', 'a browser computer boots in its page; set warm to 0'],
        [p.workspace !== 'fresh', 'workspace', 'a browser computer keeps nothing; use workspace "fresh"'],
        [
          (p.network?.mode ?? p.networkMode ?? 'none') !== 'none',
          'network',
          'a browser computer has no network; use network mode "none"',
        ],
      ];
      for (const [bad, path, message] of unsupported) {
        if (bad) ctx.addIssue({ code: 'custom', path: [path], message });
      }
    }
    if (p.user === 'root' && !p.image)
      ctx.addIssue({
        code: 'custom',
        path: ['user'],
        message:
          'root inside a computer needs an image (the host\'s directories are shared read-only); add image or use user "guest"',
      });
    if (p.image && p.backend === 'browser')
      ctx.addIssue({
        code: 'custom',
        path: ['image'],
        message: 'a browser computer boots its own image; remove image',
      });
    if (p.networkMode && p.network && p.network.mode !== p.networkMode) {
      ctx.addIssue({
        code: 'custom',
        path: ['networkMode'],
        message: `networkMode "${p.networkMode}" contradicts network.mode "${p.network.mode}"; keep only network.mode`,
      });
    }
  })
  .transform((p) => {
    const mode = p.network?.mode ?? p.networkMode ?? 'none';
    const network: NetworkConfig = { mode, ...(p.network?.allow ? { allow: p.network.allow } : {}) };
    return { ...p, networkMode: mode, network };
  });

/** The `computer` section of paddock.yaml. */
export const computerSchema = z
  .object({
    backend: z.enum(['bwrap']).default('bwrap').describe('Where computers run.'),
    previewPort: z
      .number()
      .int()
      .min(1)
      .max(65_535)
      .optional()
      .describe(
        "Port of the web preview inside every computer, overriding the profile's previewPort (default: the profile's, else 8000).",
      ),
    defaultProfile: z
      .string()
      .default('shell')
      .describe('Profile used when a tool needs a computer and none was launched.'),
    toolChannel: z
      .boolean()
      .default(true)
      .describe(
        "Let commands call the caller's auto-approved tools through the tool channel (paddock-tool).",
      ),
    autoLaunch: z
      .boolean()
      .default(true)
      .describe('Boot the default profile when a tool needs a computer and none was ever launched.'),
    profiles: z
      .array(profileSchema)
      .default([])
      .describe('Profiles besides the built-in shell, node and python (same id replaces a built-in).'),
    retentionBytes: z
      .number()
      .int()
      .min(4096)
      .max(256 * 1024 * 1024)
      .default(1024 * 1024)
      .describe('Output retained per job stream, in bytes.'),
    workspaceDir: z
      .string()
      .optional()
      .describe(
        "Host directory holding each generation's disk and staged files (default: <data dir>/computers); made 0700.",
      ),
    imagesDir: z
      .string()
      .optional()
      .describe(
        'Host directory of the image store that profiles with an image boot from (default: <data dir>/images); made 0700.',
      ),
    sandboxUid: z
      .number()
      .int()
      .min(1)
      .max(4_294_967_293)
      .default(64_000)
      .describe(
        "Host uid (and gid) of each computer's guest agent when Paddock runs as root; jobs and terminals run as the next uid. Neither should own anything else.",
      ),
    bootTimeoutMs: z
      .number()
      .int()
      .min(1000)
      .max(120_000)
      .default(15_000)
      .describe('How long a boot may take before the computer is in error.'),
    browserBootTimeoutMs: z
      .number()
      .int()
      .min(10_000)
      .max(900_000)
      .default(300_000)
      .describe(
        'How long the boot of a browser computer (an emulated PC in a dock tab, tens of seconds) may take before it is in error.',
      ),
    maxComputers: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(20)
      .describe('Computers booting or running at once on this server; a launch beyond it is LIMIT_EXCEEDED.'),
    checkpoints: z
      .object({
        maxCount: z
          .number()
          .int()
          .min(1)
          .max(10_000)
          .default(20)
          .describe('Checkpoints kept per computer; the oldest are removed first.'),
        maxBytes: z
          .number()
          .int()
          .min(1024 * 1024)
          .default(10 * 1024 ** 3)
          .describe(
            "Bytes of stored files and trees kept per computer's checkpoints; the oldest checkpoints are removed first, and a checkpoint larger than this alone is refused.",
          ),
        before: z
          .array(z.enum(['run_command']))
          .default([])
          .describe(
            'Tools before every call of which the computer is checkpointed automatically (besides calls a person approved, which always are): ["run_command"] makes every command undoable, at the cost of one checkpoint per command.',
          ),
      })
      .strict()
      .default({ maxCount: 20, maxBytes: 10 * 1024 ** 3, before: [] })
      .describe('Retention of checkpoints (checkpoint_computer), per computer, under <data>/checkpoints.'),
    idleTimeoutMs: z
      .number()
      .int()
      .min(0)
      .max(7 * 24 * 3_600_000)
      .default(30 * 60_000)
      .describe('A computer without a tool call for this long is stopped (0: never).'),
    sessionGraceMs: z
      .number()
      .int()
      .min(0)
      .max(24 * 3_600_000)
      .default(60_000)
      .describe(
        "How long a session's private computer outlives the session (a reconnecting client finds it).",
      ),
    warm: z
      .record(z.string().min(1), warmSchema)
      .default({})
      .describe(
        "Warm sandboxes by profile id, overriding the profile's own warm (e.g. { shell: 2 } for a built-in profile).",
      ),
    named: z
      .record(
        z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, 'a computer name'),
        namedComputerSchema,
      )
      .default({})
      .describe('Settings of named computers (paddock mcp --computer NAME), by name.'),
  })
  .strict();

export type ComputerConfig = z.infer<typeof computerSchema>;
export type ProfileConfig = z.output<typeof profileSchema>;
export type NetworkConfig = z.output<typeof networkSchema>;
export type LimitsConfig = z.infer<typeof limitsSchema>;
export type { ImageConfig } from './image-schema.js';
export { imageSchema };
