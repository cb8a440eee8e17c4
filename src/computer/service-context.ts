/**
 * What every computer of a server shares: the backend, profiles, launch links, typed events,
 * the warm pool and the one generation counter, plus the checks that span computers (the cap, whether the
 * server is closing, where a kept workspace lives). The ComputerService builds one for all its
 * computers; a ComputerManager run alone builds its own.
 */

import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { ComputerConfig, ProfileConfig } from '../config/computer-schema.js';
import { PaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { LaunchLinkStore } from '../store/launch-links.js';
import type { CallerContext } from '../tools/tool.js';
import { DISK_SPARE_PATTERN } from './backend/bwrap/disk-image.js';
import type { ComputerBackend, SandboxImage } from './backend/types.js';
import { CheckpointStore } from './checkpoints/store.js';
import { type ComputerEvents, computerEvents } from './events.js';
import type { BootedSandbox } from './generation/boot.js';
import type { EgressService } from './generation/egress.js';
import type { ProfileImages } from './images/profile-image.js';
import type { ToolChannelFactory } from './jobs/tool-channel.js';
import { namedWorkspaceDir } from './kept-workspaces.js';
import type { ComputerQuotas, JobTicket } from './principals.js';
import { ProfileCatalog } from './profiles.js';
import { WARM_DIR_PATTERN, WarmPool } from './warm-pool.js';

export interface ComputerServiceOptions {
  backend: ComputerBackend;
  config: ComputerConfig;
  /** The server's data directory; generations live under <dataDir>/computers unless configured. */
  dataDir: string;
  /** Base URL of the dock, e.g. http://127.0.0.1:7331 (launch answers `<dockUrl>/`). */
  dockUrl: string;
  logger: Logger;
  /** The launch link store; without it launch links are unavailable. */
  launchLinks?: LaunchLinkStore | null;
  /** Opens tool channels for commands (none: commands have no channel). */
  toolChannels?: ToolChannelFactory;
  /** Where the web app mounts the preview (the pane's URL prefix). */
  preview?: { basePath: string };
  /** Egress through the host proxy for profiles with network mode "proxy" (none: such profiles are unavailable). */
  egress?: EgressService;
  /** Read-only host directories every computer sees (e.g. the skills of `.paddock/skills` at /skills). */
  sharedMounts?: { source: string; target: string; readOnly: true }[];
  /** What each client and agent may hold (paddock.yaml `principals`); none: no per-principal limits. */
  quotas?: ComputerQuotas;
  /** The images of profiles that name one (none: such profiles are unavailable). */
  images?: ProfileImages | null;
}

/** The checks a service adds over its computers. */
export interface ContextHooks {
  /** LIMIT_EXCEEDED when computer `key` may not start another running computer. */
  assertCapacity?(key: string): void;
  /** A generation of computer `key` was launched. */
  launched?(key: string, generation: number): void;
  /** Computers booting or running (what counts against `computer.maxComputers`). */
  activeComputers?(): number;
  /** A job slot for `caller` on computer `key` (LIMIT_EXCEEDED over its principal's quota). */
  reserveJob?(caller: CallerContext | undefined, key: string): JobTicket;
}

/** Whether a computer's /workspace is kept across generations. */
export type WorkspaceMode = 'keep' | 'fresh';

export class ComputerContext {
  readonly profiles: ProfileCatalog;
  readonly launchLinks: LaunchLinkStore | null;
  readonly events: ComputerEvents;
  /** Warm sandboxes per profile (pooled ones count against the cap's headroom, never a launch's). */
  readonly pool: WarmPool;
  /** Checkpoints of computers' /workspace, under `<dataDir>/checkpoints`. */
  readonly checkpoints: CheckpointStore;
  private readonly computersDir: string;
  /** `<dataDir>/workspaces`: one directory per computer that keeps its workspace. */
  private readonly keptRoot: string;
  /** Generation → the computer that launched it (stale ids stay STALE_GENERATION, foreign ones NOT_FOUND). */
  private readonly generations = new Map<number, string>();
  private lastGeneration: number;
  private closing = false;

  constructor(
    private readonly options: ComputerServiceOptions,
    private readonly hooks: ContextHooks = {},
  ) {
    this.events = computerEvents(options.logger.child({ domain: 'computer' }));
    this.profiles = new ProfileCatalog(
      options.config.profiles,
      (name) => options.backend.hasProgram(name),
      options.egress !== undefined,
      (backend) =>
        options.backend.unavailable
          ? options.backend.unavailable(backend)
          : `this server has no "${backend}" backend.`,
      options.images ?? null,
    );
    this.launchLinks = options.launchLinks ?? null;
    this.computersDir = options.config.workspaceDir ?? join(options.dataDir, 'computers');
    this.keptRoot = join(options.dataDir, 'workspaces');
    // everything of a computer lives below these two: closed to every other account
    for (const dir of [this.computersDir, this.keptRoot]) privateDir(dir);
    this.lastGeneration = this.readGenerationCounter();
    options.backend.sweep?.([this.computersDir, this.keptRoot]);
    this.sweepLeftovers();
    this.checkpoints = new CheckpointStore({
      dataDir: options.dataDir,
      retention: options.config.checkpoints,
    });
    this.pool = new WarmPool({
      backend: options.backend,
      logger: options.logger.child({ domain: 'computer' }),
      dir: this.computersDir,
      bootTimeoutMs: options.config.bootTimeoutMs,
      targets: this.warmTargets(),
      files: () => options.egress?.guestFiles() ?? {},
      image: (profile) => this.imageOf(profile),
      room: (pooled) => (hooks.activeComputers?.() ?? 0) + pooled < options.config.maxComputers,
    });
    // a computer that ends frees room under the cap; the refill waits for the launch under way
    // (a relaunch stops the previous generation) to run first
    this.events.on((e) => {
      if (e.type === 'lifecycle' && (e.lifecycle === 'stopped' || e.lifecycle === 'error'))
        setImmediate(() => this.pool.refill());
    });
    this.pool.start();
  }

  /** What a launch of `profile` mounts as its root (undefined: the host's directories); throws when its image is missing. */
  imageOf(profile: ProfileConfig): SandboxImage | undefined {
    if (!profile.image) return undefined;
    if (!this.options.images)
      throw new PaddockError(
        'UNSUPPORTED_CAPABILITY',
        'This server has no image store; use a profile without an image.',
      );
    return this.options.images.mountable(profile);
  }

  /**
   * The profile with its image's environment under its own `env` (the image config's variables,
   * PATH excepted, and USER / LOGNAME of root when jobs run as root).
   */
  withImageEnv(profile: ProfileConfig): ProfileConfig {
    if (!profile.image) return profile;
    const fromImage = this.options.images?.env(profile) ?? {};
    const root: Record<string, string> = profile.user === 'root' ? { USER: 'root', LOGNAME: 'root' } : {};
    return { ...profile, env: { ...fromImage, ...root, ...profile.env } };
  }

  get backend(): ComputerBackend {
    return this.options.backend;
  }
  get config(): ComputerConfig {
    return this.options.config;
  }
  get logger(): Logger {
    return this.options.logger;
  }
  get egress(): EgressService | undefined {
    return this.options.egress;
  }
  get toolChannels(): ToolChannelFactory | undefined {
    return this.options.toolChannels;
  }
  get sharedMounts(): { source: string; target: string; readOnly: true }[] {
    return this.options.sharedMounts ?? [];
  }
  get previewBasePath(): string | undefined {
    return this.options.preview?.basePath;
  }
  /** True once the server is shutting down. */
  get closed(): boolean {
    return this.closing;
  }

  /** From now on nothing launches. */
  close(): void {
    this.closing = true;
    this.pool.close();
  }

  /** Destroys every pooled sandbox (at shutdown, after close). */
  drainPool(): Promise<void> {
    return this.pool.drain();
  }

  /** `profile` with the read-only mounts every computer sees. */
  withSharedMounts(profile: ProfileConfig): ProfileConfig {
    return { ...profile, mounts: [...profile.mounts, ...this.sharedMounts] };
  }

  /**
   * A warm sandbox for a new generation of computer `key` running `profile`, or null. Only a
   * fresh-workspace computer takes one: a kept workspace is bound when a sandbox boots, so it
   * always boots cold.
   */
  takeWarm(key: string, profile: ProfileConfig): BootedSandbox | null {
    if (this.workspaceMode(key, profile) !== 'fresh') return null;
    return this.pool.take(profile.id);
  }

  /**
   * Makes room under the cap for a cold boot of a computer that does not count yet: when the
   * computers and the pool fill it, one pooled sandbox goes. Settles once it is gone.
   */
  async makeRoom(): Promise<void> {
    const active = this.hooks.activeComputers?.() ?? 0;
    if (active + this.pool.size >= this.options.config.maxComputers) await this.pool.evict();
  }

  /** Sets the dock's base URL once the server knows it (it may listen on a port picked at start). */
  setDockUrl(url: string): void {
    this.options.dockUrl = url;
  }

  /** The dock's URL, ending in `/`. */
  dockUrl(): string {
    return `${this.options.dockUrl.replace(/\/+$/, '')}/`;
  }

  /** NOT_RUNNING when the server is shutting down. */
  assertOpen(): void {
    if (this.closing)
      throw new PaddockError('NOT_RUNNING', 'The server is shutting down; launch after it restarts.');
  }

  /** LIMIT_EXCEEDED when computer `key` may not start another running computer. */
  assertCapacity(key: string): void {
    this.hooks.assertCapacity?.(key);
  }

  /** A job slot for `caller` on computer `key`; LIMIT_EXCEEDED over its principal's quota. */
  reserveJob(caller: CallerContext | undefined, key: string): JobTicket {
    return this.hooks.reserveJob?.(caller, key) ?? { started: () => {}, release: () => {} };
  }

  /** The next generation number of the server (unique across its computers), for computer `key`. */
  nextGeneration(key: string): number {
    const generation = ++this.lastGeneration;
    writeFileSync(join(this.computersDir, 'generation'), `${generation}\n`);
    this.generations.set(generation, key);
    return generation;
  }

  /** A generation of computer `key` was launched. */
  launched(key: string, generation: number): void {
    this.hooks.launched?.(key, generation);
  }

  /** Whether `generation` was launched by computer `key`. */
  launchedHere(key: string, generation: number): boolean {
    return this.generations.get(generation) === key;
  }

  /** Host directory of one generation (removed with it). */
  generationDir(generation: number): string {
    return join(this.computersDir, `g${generation}`);
  }

  /** Whether computer `key` keeps its workspace when running `profile`. */
  workspaceMode(key: string, profile: ProfileConfig): WorkspaceMode {
    const named = key.startsWith('named:')
      ? this.options.config.named[key.slice('named:'.length)]
      : undefined;
    return named?.workspace ?? profile.workspace;
  }

  /** The name computer `key`'s checkpoints are stored under: its own name, or a digest of a private key. */
  checkpointKey(key: string): string {
    return key.startsWith('named:')
      ? key.slice('named:'.length)
      : `private-${createHash('sha256').update(key).digest('hex').slice(0, 24)}`;
  }

  /**
   * The directory of computer `key`'s kept workspace: `<dataDir>/workspaces/<computer>` (its
   * disk image, see backend/workspace.ts), which no generation's teardown ever removes. Null
   * when the workspace is fresh.
   */
  keptDir(key: string, profile: ProfileConfig): string | null {
    if (this.workspaceMode(key, profile) !== 'keep') return null;
    const name = key.startsWith('named:')
      ? namedWorkspaceDir(key.slice('named:'.length))
      : `private-${createHash('sha256').update(key).digest('hex').slice(0, 24)}`;
    const own = join(this.keptRoot, name);
    mkdirSync(own, { recursive: true, mode: 0o700 });
    return own;
  }

  /**
   * How many warm sandboxes each available profile keeps. An id in `computer.warm` that names no
   * profile fails the start; a profile that keeps some but cannot launch here is logged and skipped.
   */
  private warmTargets(): { profile: ProfileConfig; warm: number }[] {
    const { warm } = this.options.config;
    const known = new Set(this.profiles.all().map((p) => p.id));
    for (const id of Object.keys(warm)) {
      if (!known.has(id))
        throw new PaddockError(
          'INVALID_ARGUMENT',
          `computer.warm.${id}: no profile "${id}"; use one of ${[...known].join(', ')}.`,
        );
    }
    const targets: { profile: ProfileConfig; warm: number }[] = [];
    for (const p of this.profiles.all()) {
      const n = warm[p.id] ?? p.warm;
      if (n === 0) continue;
      const { available, reason } = this.profiles.availability(p);
      if (!available) {
        this.options.logger.warn('computer.warm_unavailable', { profile: p.id, reason });
        continue;
      }
      targets.push({ profile: this.withSharedMounts(p), warm: n });
    }
    return targets;
  }

  /**
   * Removes the host directories of generations and pooled sandboxes a previous run left in the
   * computers directory (`g<N>`, `warm-XXXXXX`: never a kept workspace; a crash leaves them
   * behind, each with its disk), and its blank spare disks. One server owns a data directory, so none of them is in use.
   */
  private sweepLeftovers(): void {
    for (const name of readdirSync(this.computersDir)) {
      if (WARM_DIR_PATTERN.test(name) || /^g\d+$/.test(name) || DISK_SPARE_PATTERN.test(name))
        rmSync(join(this.computersDir, name), { recursive: true, force: true });
    }
  }

  private readGenerationCounter(): number {
    let last = 0;
    const file = join(this.computersDir, 'generation');
    if (existsSync(file)) last = Number.parseInt(readFileSync(file, 'utf8'), 10) || 0;
    for (const name of readdirSync(this.computersDir)) {
      const m = /^g(\d+)$/.exec(name);
      if (m) last = Math.max(last, Number(m[1]));
    }
    return last;
  }
}

/**
 * Creates `dir` (and its parents) and closes it to other accounts: mode 0700, whatever mode an
 * older version or an operator left it with. A directory owned by another account is refused.
 */
function privateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  const uid = process.getuid?.() ?? st.uid;
  if (!st.isDirectory() || st.uid !== uid)
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `${dir} is not a directory owned by uid ${uid}; remove it (or use another data directory) and start again.`,
    );
  if ((st.mode & 0o1002) !== 0)
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `${dir} is a directory every account may write to; give computers a directory of their own (computer.workspaceDir, or the data directory's default) and start again.`,
    );
  if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}
