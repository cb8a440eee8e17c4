/**
 * The shapes a checkpoint is made of on disk. A checkpoint is a manifest naming the root tree; a
 * tree is one directory's entries; a file entry names the blob holding its bytes. Trees and blobs
 * are objects named by the SHA-256 of their bytes, so an unchanged directory or file costs nothing
 * in a later checkpoint.
 */
import { basename } from 'node:path';
import type { SandboxImage } from '../backend/types.js';

/** What every entry records about its inode, restored exactly. */
export interface EntryMeta {
  name: string;
  /** Permission bits including setuid, setgid and sticky (`mode & 0o7777`). */
  mode: number;
  uid: number;
  gid: number;
  /** Modification time in nanoseconds since the epoch, as a decimal string (exceeds 2^53). */
  mtimeNs: string;
}

/** A regular file: its bytes live in blob `hash`. `ino` and `ctimeNs` let the next checkpoint reuse it unread. */
export interface FileEntry extends EntryMeta {
  type: 'file';
  size: number;
  hash: string;
  ino: string;
  ctimeNs: string;
}

/** A further name of a file met earlier in the same checkpoint (a hard link), by its root-relative path. */
export interface LinkEntry {
  name: string;
  type: 'hardlink';
  target: string;
}

/** A symbolic link: its text is stored, never followed. */
export interface SymlinkEntry extends EntryMeta {
  type: 'symlink';
  target: string;
}

/**
 * A directory: its entries are tree `tree`. `opaque` (root layers only): overlayfs's
 * `trusted.overlay.opaque=y`, the directory hides every entry of the image beneath it.
 */
export interface DirEntry extends EntryMeta {
  type: 'dir';
  tree: string;
  opaque?: true;
}

/**
 * An overlayfs whiteout (root layers only): a character device 0/0 in the writable layer that
 * hides the image's entry of the same name (a file the computer deleted).
 */
export interface WhiteoutEntry extends EntryMeta {
  type: 'whiteout';
}

export type TreeEntry = FileEntry | LinkEntry | SymlinkEntry | DirEntry | WhiteoutEntry;

/** One directory's entries, sorted by name. */
export interface Tree {
  entries: TreeEntry[];
}

/** Which image a root layer lies over: its store name and its layers, top first. */
export interface ImageIdentity {
  name: string;
  /** The layer directories' names (`top`, then each layer's id): a rebuilt image differs here. */
  layers: string[];
}

/** The writable root layer of a computer on an image, beside its /workspace. */
export interface RootLayer {
  /** The overlay's upper directory itself (its name is empty). */
  root: DirEntry;
  image: ImageIdentity;
  files: number;
  bytes: number;
  skipped: number;
}

/**
 * A root layer to start a generation with: `fill` writes it into the empty directory it is given;
 * it was made over `image`, which the generation's image must be; `bytes` of files (the launch
 * copies them onto the disk, so the boot may take longer).
 */
export interface RootSeed {
  image: ImageIdentity;
  bytes: number;
  fill: (dir: string) => Promise<void>;
}

/** The parts of a computer a checkpoint can hold. */
export type CheckpointLayer = 'workspace' | 'root';

/** The record that makes a checkpoint exist: written last, by rename. */
export interface Manifest {
  version: 1;
  id: string;
  /** Per computer, increasing: orders checkpoints. */
  seq: number;
  computer: string;
  label: string | null;
  createdAt: string;
  /** The root directory itself (its name is empty). */
  root: DirEntry;
  /** Bytes of objects this checkpoint wrote that no earlier object had (what it added to disk). */
  addedBytes: number;
  files: number;
  bytes: number;
  /** Sockets, FIFOs and device nodes met and not kept (count). */
  skipped: number;
  /** Why and from what it was taken (absent in checkpoints of earlier versions). */
  origin?: CheckpointOrigin;
  /** How long the computer's processes were frozen for the walk (null: they were not). */
  pausedMs?: number | null;
  /** The computer's writable root layer, when it ran on an image (absent: /workspace only). */
  rootLayer?: RootLayer;
}

/** What made a checkpoint. */
export type CheckpointTrigger = 'manual' | 'approval' | 'restore' | 'stop' | 'run_command';

/** Why a checkpoint was taken, of which profile, and the call it precedes, if any. */
export interface CheckpointOrigin {
  trigger: CheckpointTrigger;
  /** The profile of the generation it was taken of (what a fork or a later boot launches). */
  profileId?: string;
  /** The generation it was taken of. */
  generation?: number;
  /** The audit row of the call it was taken just before (automatic checkpoints), with its approval. */
  before?: { invocationId: string; tool: string; approvalId: string | null };
}

/** What a caller sees of a checkpoint. */
export interface CheckpointInfo {
  id: string;
  seq: number;
  label: string | null;
  createdAt: string;
  addedBytes: number;
  files: number;
  bytes: number;
  skipped: number;
  trigger: CheckpointTrigger;
  profileId: string | null;
  generation: number | null;
  /** The audit row this checkpoint precedes (the call it was taken for), or null. */
  before: { invocationId: string; tool: string; approvalId: string | null } | null;
  /** How long the computer's processes were frozen while it was taken (null: not frozen). */
  pausedMs: number | null;
  /** What it holds: always `workspace`, and `root` when it has the computer's root layer. */
  layers: CheckpointLayer[];
  /** The image its root layer lies over (null: no root layer). */
  image: string | null;
}

/** Retention of one computer's checkpoints. */
export interface Retention {
  /** At most this many checkpoints; the oldest go first (setting `computer.checkpoints.maxCount`). */
  maxCount: number;
  /** At most this many bytes of objects; the oldest go first (setting `computer.checkpoints.maxBytes`). */
  maxBytes: number;
}

/** Names of the retention settings as a person configures them, used in error messages. */
export const RETENTION_SETTINGS = {
  maxCount: 'computer.checkpoints.maxCount',
  maxBytes: 'computer.checkpoints.maxBytes',
} as const;

/** The manifest's public part: files, bytes and skipped count both layers. */
export function infoOf(m: Manifest): CheckpointInfo {
  const r = m.rootLayer;
  return {
    id: m.id,
    seq: m.seq,
    label: m.label,
    createdAt: m.createdAt,
    addedBytes: m.addedBytes,
    files: m.files + (r?.files ?? 0),
    bytes: m.bytes + (r?.bytes ?? 0),
    skipped: m.skipped + (r?.skipped ?? 0),
    layers: r ? ['workspace', 'root'] : ['workspace'],
    image: r?.image.name ?? null,
    trigger: m.origin?.trigger ?? 'manual',
    profileId: m.origin?.profileId ?? null,
    generation: m.origin?.generation ?? null,
    before: m.origin?.before ?? null,
    pausedMs: m.pausedMs ?? null,
  };
}

/** The identity of the image a backend mounts. */
export function imageIdentityOf(image: SandboxImage): ImageIdentity {
  return { name: image.name, layers: image.lowerDirs.map((d) => basename(d)) };
}

/** Whether a root layer taken over `a` may be laid over `b`: the same image, layer for layer. */
export function sameImage(a: ImageIdentity, b: ImageIdentity): boolean {
  return (
    a.name === b.name && a.layers.length === b.layers.length && a.layers.every((l, i) => l === b.layers[i])
  );
}
