/**
 * The answers of launch_computer and get_computer_status.
 */
import type { Generation, Lifecycle } from './generation/generation.js';
import type { ServiceInfo } from './generation/services.js';
import type { PreviewState } from './preview/preview-service.js';
import type { TerminalInfo } from './terminals/terminal.js';

/** What launch_computer answers. */
export interface LaunchResult {
  [key: string]: unknown;
  generation: number;
  profileId: string;
  lifecycle: Lifecycle;
  url: string;
  /**
   * What became of the replaced generation's /workspace: `deleted` (a fresh workspace goes with
   * its generation), `carried` (copied over with keepWorkspace), `kept` (the profile keeps it),
   * `none` (nothing was replaced).
   */
  previousWorkspace: 'none' | 'kept' | 'carried' | 'deleted';
  message: string;
}

/** The launch answer's first sentence about the generation it replaced (empty when none). */
export function replacedSentence(
  replaced: number | null,
  workspace: LaunchResult['previousWorkspace'],
): string {
  if (replaced === null || workspace === 'none') return '';
  const what =
    workspace === 'deleted'
      ? 'its /workspace was deleted with it (pass keepWorkspace: true to carry it over next time)'
      : workspace === 'carried'
        ? 'its /workspace was copied into the new computer'
        : 'its /workspace is kept';
  return `Generation ${replaced} was replaced: its processes were stopped and ${what}. `;
}

/** What get_computer_status answers. */
export interface ComputerStatus {
  [key: string]: unknown;
  /** Null before the first launch. */
  generation: number | null;
  profileId: string | null;
  profileName: string | null;
  /** `none` before the first launch. */
  lifecycle: Lifecycle | 'none';
  bootError: string | null;
  bootMs: number | null;
  /** What works right now: `jobs`, `cancel_job`, `files`, `logs`, `terminals`, `preview` while running. */
  capabilities: string[];
  /** How a job's process family is owned: `cgroup` (whole family) or `session` (best effort). */
  processFamilies: 'cgroup' | 'session' | null;
  limits: Record<string, number> | null;
  /** The terminal the dock shows (null when the computer has none). */
  activeTerminal: TerminalInfo | null;
  /** The preview pane: port inside the computer, last path, and what was observed there. */
  preview: PreviewState | null;
  /** Jobs started with run_command's `background`, with the ports they listen on. */
  services: ServiceInfo[];
  /** TCP ports something inside the computer listens on (navigate_preview can show any of them). */
  listeningPorts: number[];
  /** The dock. */
  url: string;
}

/** The status of `c` (or of no computer yet). */
export function describeStatus(
  c: Generation | null,
  dockUrl: string,
  shared: {
    activeTerminal: TerminalInfo | null;
    preview: PreviewState | null;
    services?: ServiceInfo[];
    listeningPorts?: number[];
  } = {
    activeTerminal: null,
    preview: null,
  },
): ComputerStatus {
  if (!c) {
    return {
      generation: null,
      profileId: null,
      profileName: null,
      lifecycle: 'none',
      bootError: null,
      bootMs: null,
      capabilities: [],
      processFamilies: null,
      limits: null,
      activeTerminal: null,
      preview: null,
      services: [],
      listeningPorts: [],
      url: dockUrl,
      message: 'No computer was launched yet; call list_profiles, then launch_computer.',
    };
  }
  const running = c.lifecycle === 'running';
  const { outputBytes: _omit, ...limits } = c.profile.limits;
  return {
    generation: c.generation,
    profileId: c.profile.id,
    profileName: c.profile.name,
    lifecycle: c.lifecycle,
    bootError: c.bootError,
    bootMs: c.bootMs,
    capabilities: running ? ['jobs', 'cancel_job', 'files', 'logs', 'terminals', 'preview'] : [],
    processFamilies: c.instance?.familyMechanism ?? null,
    limits,
    activeTerminal: shared.activeTerminal,
    preview: shared.preview,
    services: shared.services ?? [],
    listeningPorts: shared.listeningPorts ?? [],
    url: dockUrl,
  };
}

/** The launch answer's sentence about the checkpoint a named computer comes back from. */
export function comebackSentence(c: {
  id: string;
  label: string | null;
  trigger: string;
  createdAt: string;
}): string {
  return `Its files come back from checkpoint ${c.id} (${c.label ?? c.trigger}, ${c.createdAt}). `;
}
