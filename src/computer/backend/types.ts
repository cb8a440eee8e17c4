/**
 * The seam between the computer and where it runs. A backend starts the guest agent somewhere
 * isolated and hands back its stdio; everything else (jobs, files, later PTYs and relays) is the
 * guest protocol, the same for every backend. bwrap is the local backend; a remote backend
 * (a Kubernetes pod, a VM) runs the same agent and implements the same interface.
 */
import type { Readable, Writable } from 'node:stream';

/** A host path made visible inside the computer. */
export interface MountSpec {
  /** Absolute host path. */
  source: string;
  /** Absolute guest path. */
  target: string;
  readOnly: boolean;
}

/** Resource limits of one computer; a job's family gets most of them, the agent keeps a reserve. */
export interface ResourceLimits {
  /** Processes of the whole computer. */
  processes: number;
  /** Memory of the whole computer, MiB. */
  memoryMb: number;
  /** Disk of the computer, MiB: /workspace and /tmp together (and the largest file a job may write). */
  diskMb: number;
  /** Open files per process. */
  openFiles: number;
}

/** What to start. */
export interface SandboxSpec {
  /** Generation number (part of names and the hostname); 0 for a pooled sandbox no generation holds yet. */
  generation: number;
  /**
   * Name of the sandbox's host resources (cgroup, directories) and of its hostname
   * (`paddock-<name>`); default `g<generation>`. A pooled sandbox has a name of its own.
   */
  name?: string;
  /** Host directory owned by this generation (under the data directory): its disk and staged files live here. */
  hostDir: string;
  /**
   * Host directory of a workspace kept across generations instead of a fresh one (its disk image,
   * or a plain `workspace/` directory where disks cannot be mounted): the backend never removes
   * it (nor its parent).
   */
  keptDir?: string;
  /** Extra mounts from the profile. */
  mounts: MountSpec[];
  /** Environment of the guest agent (jobs get their own on top). */
  env: Record<string, string>;
  limits: ResourceLimits;
  networkMode: 'none' | 'proxy';
  /** Program names whose presence the agent reports in its hello. */
  probe: string[];
  /** The backend the profile names (`browser`); absent: the server's own. */
  backend?: string;
  /** Extra read-only files by guest path (e.g. the trust bundle of the egress proxy). */
  files?: Record<string, string | Uint8Array>;
  /**
   * The image the computer's root file system comes from (absent: the host's own directories,
   * read-only): its layers as overlayfs lower directories, top first, under a writable layer of
   * the computer's own on its disk. `user`: the account jobs and terminals run as.
   */
  image?: SandboxImage;
  /**
   * A host directory that becomes the computer's writable root layer (a restored checkpoint's,
   * complete before the launch): copied onto the fresh disk before the overlay is mounted. Only
   * with `image`, never with `keptDir`.
   */
  seedRoot?: string;
}

/** A computer's image as the backend mounts it. */
export interface SandboxImage {
  /** The image's store name (logs and status). */
  name: string;
  /** Host directories of its layers, top first. */
  lowerDirs: string[];
  /** `guest`: jobs run as the guest account (uid 1000); `root`: as root of the computer. */
  user: 'guest' | 'root';
}

/** How the root of a job and all its descendants are tracked. */
export type FamilyMechanism = 'cgroup' | 'session';

/** The process family of one job, owned by the host. */
export interface JobFamily {
  /** Its name, the leaf of the cgroup path its processes see (`job7`): how the guest names a job. */
  readonly name: string;
  /** Kills every process of the family, whatever sessions or groups they moved to. */
  kill(): Promise<void>;
  /** True when no process of the family is left. */
  isEmpty(): boolean;
  /** Waits until empty; false at the deadline. */
  waitEmpty(timeoutMs: number): Promise<boolean>;
  /** Host pids of the family (diagnostics and tests). */
  hostPids(): number[];
  /** Frees host resources once the family is empty (idempotent). */
  dispose(): Promise<void>;
}

/** The limits a job's processes get from the backend's families (rlimits applied in the guest). */
export interface JobRlimits {
  openFiles?: number;
  fileSizeBytes?: number;
  processes?: number;
  dataBytes?: number;
}

/** A started sandbox: the agent's stdio and the host-side controls. */
export interface SandboxInstance {
  /** Frames from the guest agent (its stdout). */
  readonly fromGuest: Readable;
  /** Frames to the guest agent (its stdin). */
  readonly toGuest: Writable;
  /** The agent's diagnostics (its stderr). */
  readonly diagnostics: Readable;
  /** Settles when the sandbox is gone, with how it ended. */
  readonly exited: Promise<{ exitCode: number | null; signal: string | null }>;
  /** `cgroup`: families are killed as a whole by the host; `session`: best effort via the guest. */
  readonly familyMechanism: FamilyMechanism;
  /** rlimits the guest applies to each job (where the host cannot enforce a limit itself). */
  readonly jobRlimits: JobRlimits;
  /** Which limits are enforced and how, for status and logs. */
  readonly enforcement: Record<string, string>;
  /** How long the preview's probe waits for a server in this guest to answer (default 3 s). */
  readonly previewAnswerMs?: number;
  /** Host pid of the outermost sandbox process (for tests and diagnostics). */
  readonly hostPid: number;
  /**
   * Where the host reaches /workspace while the sandbox runs (null for a remote backend): a host
   * directory, or a path through the sandbox's `/proc/<pid>/root` when its disk is mounted only
   * in the sandbox's own mount namespace.
   */
  readonly hostWorkspace: string | null;
  /**
   * The writable root layer of a computer on an image: where the host reaches the overlay's upper
   * directory while the sandbox runs (`hostPath`, through its `/proc/<pid>/root`) and the image
   * beneath it; null or absent without an image.
   */
  readonly rootLayer?: { hostPath: string; image: SandboxImage } | null;
  /** Whether the disk limit holds for everything the computer's jobs can write (absent: no disk). */
  readonly diskQuota?: { enforced: boolean; detail: string };
  /**
   * Places a freshly spawned, still held job (guest pid) in its own family. Returns null when the
   * backend has no host-side families (`session`).
   */
  adoptJob(name: string, guestPid: number, agentGuestPid: number): Promise<JobFamily | null>;
  /**
   * Freezes every process of the computer where it stands (a checkpoint's consistent moment);
   * resolves to the thaw, or null when this backend cannot freeze (absent: never).
   */
  pause?(): Promise<(() => void) | null>;
  /** Kills everything of this computer and frees its host resources. Idempotent. */
  destroy(): Promise<void>;
}

/** A place where computers run. */
export interface ComputerBackend {
  readonly name: string;
  /** Starts the guest agent. Throws PaddockError with a clear message when the spec cannot run. */
  launch(spec: SandboxSpec): Promise<SandboxInstance>;
  /** Whether an executable exists where the guest will see it (profile availability). */
  hasProgram(name: string): boolean;
  /**
   * Why profiles naming `backend` (a profile's `backend` field) cannot launch now, or null when
   * they can. Absent: only the server's own backend exists.
   */
  unavailable?(backend: string): string | null;
  /**
   * Removes what a crashed server left of the computers kept under `dirs` (the computers and
   * kept-workspace directories of one data directory), before they are reused.
   */
  sweep?(dirs: string[]): void;
  /** Frees everything the backend holds (cgroups of this server). */
  dispose(): Promise<void>;
}
