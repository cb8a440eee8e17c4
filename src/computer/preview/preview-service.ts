/**
 * The web preview: a server listening inside the computer on the preview port, reached through
 * byte streams the guest agent relays over its link — the computer's network namespace stays
 * closed. `navigate_preview` (and the
 * dock's path bar) move the dock's preview pane and report what they observed.
 *
 * The service has the shape of the dock's PreviewSource (state, navigate, onChange) and offers
 * byte streams to guest ports (`openPort`); the web app speaks HTTP over them (web/preview/).
 */

import { type ClientRequest, request } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Disposable } from '../../shared/disposable.js';
import { Emitter } from '../../shared/emitter.js';
import { isPaddockError, PaddockError } from '../../shared/errors.js';
import type { Generation } from '../generation/generation.js';
import { jobListeningOn, listeningPortsOf } from '../generation/services.js';
import { GuestConnector, type GuestSocket } from '../link/guest-socket.js';
import type { ComputerLog } from '../logs.js';
import type { PreviewState } from './preview-state.js';

/** Port previewed when neither the configuration nor the profile names one. */
export const DEFAULT_PREVIEW_PORT = 8000;
/** Longest wait for the probe's answer after connecting. */
const PROBE_TIMEOUT_MS = 3000;

export type { PreviewState };

/** What one probe of the preview port found. */
export interface PreviewObservation {
  [key: string]: unknown;
  port: number;
  /** Something accepted a connection on the port inside the computer. */
  listening: boolean;
  /** Status of a GET of the path, when the server answered within the probe's time. */
  httpStatus: number | null;
  status: PreviewState['status'];
  message: string;
  /** The job listening on the port, when the backend can tell. */
  jobId?: string | null;
  /** Said when that job is not a service: its timeout will end the server and the preview. */
  warning?: string;
}

/** What the service needs from the ComputerManager. */
export interface PreviewHost {
  readonly computer: Generation | null;
  requireRunning(signal?: AbortSignal): Promise<Generation>;
  readonly log: ComputerLog;
}

export interface PreviewServiceOptions {
  /** Port previewed in every profile (computer.previewPort), overriding the profile's. */
  portOverride?: number;
  /** Where the web app mounts the preview (the pane's URL prefix); default `/preview`. */
  basePath?: string;
}

/**
 * Checks a guest path for navigate_preview: starts with one `/`, no scheme or host, no `..`
 * segment (also percent-encoded), no backslash, no control characters, at most 4096 characters.
 */
export function checkPreviewPath(path: string): string {
  const bad = (why: string) =>
    new PaddockError(
      'INVALID_ARGUMENT',
      `The preview path "${path.slice(0, 200)}" ${why}; pass a path inside the computer's web server such as /index.html?x=1#top.`,
    );
  if (path.length === 0 || path.length > 4096) throw bad('must have 1 to 4096 characters');
  if (!path.startsWith('/')) throw bad('does not start with "/" (external URLs cannot be previewed)');
  if (path.startsWith('//')) throw bad('starts with "//", which browsers read as another host');
  if (path.includes('\\') || /%5c/i.test(path)) throw bad('contains a backslash');
  if (/[\u0000-\u001f\u007f\s]/.test(path)) throw bad('contains a space or a control character');
  const pathname = path.split(/[?#]/, 1)[0]!;
  for (const segment of pathname.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw bad('has malformed percent-encoding');
    }
    if (decoded === '..' || decoded.includes('/') || decoded.includes('\\'))
      throw bad('has a ".." segment or an encoded separator');
  }
  return path;
}

export class PreviewService {
  private readonly connector = new GuestConnector();
  /** A listener's failure is its own. */
  private readonly changes = new Emitter<PreviewState>();
  private readonly basePath: string;
  private current: PreviewState & { generation: number | null };

  constructor(
    private readonly host: PreviewHost,
    private readonly options: PreviewServiceOptions = {},
  ) {
    this.basePath = (options.basePath ?? '/preview').replace(/\/+$/, '');
    this.current = { ...this.idle(), generation: null };
  }

  /** The port previewed in the current computer: the last one navigated to, else the configured one. */
  port(c: Generation | null = this.host.computer): number {
    const { generation, port } = this.current;
    if (c && generation === c.generation && port !== null) return port;
    return this.configuredPort(c);
  }

  /** The port a computer's preview shows before any navigation names another. */
  configuredPort(c: Generation | null = this.host.computer): number {
    return this.options.portOverride ?? c?.profile.previewPort ?? DEFAULT_PREVIEW_PORT;
  }

  /**
   * A job of the current computer ended: when it served the preview, the pane says so (its
   * server is gone) instead of only turning unreachable on the next request.
   */
  jobEnded(generation: number, jobId: string, state: string, how: string): void {
    const c = this.current;
    if (c.generation !== generation || c.jobId !== jobId || c.jobEnded) return;
    const advice =
      state === 'timed_out'
        ? ' Start the server with run_command and background: true so no timeout ends it.'
        : ' Start the server again to bring the preview back.';
    this.set({
      ...c,
      status: 'unreachable',
      message: `The server on port ${c.port} stopped: job ${jobId} ${how}.${advice}`,
      jobEnded: { jobId, state },
    });
  }

  /** The pane's state; a new generation starts idle. */
  state(): PreviewState {
    const { generation, ...state } = this.current;
    const c = this.host.computer;
    if (!c || generation !== c.generation) return this.idle(state.navigation);
    return state;
  }

  /** Moves the preview to `path` on `port` (default the current one) and reveals it, then probes the port. */
  async navigate(path: string, port?: number, signal?: AbortSignal): Promise<PreviewState> {
    return (await this.navigateAndObserve(path, signal, port)).state;
  }

  /** TCP ports something inside the running computer listens on. */
  ports(): number[] {
    return listeningPortsOf(this.host.computer);
  }

  /** navigate_preview: the request as made and what the probe observed. */
  async navigateAndObserve(
    path: string,
    signal?: AbortSignal,
    toPort?: number,
  ): Promise<{ state: PreviewState; observed: PreviewObservation; generation: number }> {
    checkPreviewPath(path);
    if (toPort !== undefined) checkPreviewPort(toPort);
    const c = await this.host.requireRunning(signal);
    const port = toPort ?? this.port(c);
    const navigation = this.current.navigation + 1;
    this.set({
      path,
      url: `${this.basePath}${path}`,
      port,
      status: 'loading',
      message: null,
      navigation,
      jobId: null,
      jobEnded: null,
      generation: c.generation,
    });
    this.host.log.add('info', 'preview.navigate', `Preview moved to ${path.slice(0, 200)} (port ${port}).`, {
      generation: c.generation,
    });
    const observed = await this.probe(c, port, path);
    const jobId = observed.listening ? jobListeningOn(c, port) : null;
    const job = jobId ? c.jobs.list().find((j) => j.id === jobId) : undefined;
    if (observed.listening) observed.jobId = jobId;
    if (job && !job.background && !job.terminationObserved) {
      observed.warning = `The server on port ${port} belongs to job ${job.id}, which is not a background job: its timeoutMs will end it and the preview. Start servers with run_command and background: true.`;
    }
    if (this.current.navigation === navigation)
      this.set({ ...this.current, status: observed.status, message: observed.message, jobId });
    return { state: this.state(), observed, generation: c.generation };
  }

  /** Fires on every navigation request and state change. */
  onChange(listener: (state: PreviewState) => void): Disposable {
    return this.changes.on(listener);
  }

  /** Connects to the port and GETs `path` (without its fragment); never throws. */
  async probe(c: Generation, port: number, path: string): Promise<PreviewObservation> {
    const answerMs = c.instance?.previewAnswerMs ?? PROBE_TIMEOUT_MS;
    let socket: GuestSocket;
    try {
      socket = await this.connector.open(c, port);
    } catch (e) {
      return {
        port,
        listening: false,
        httpStatus: null,
        status: 'unreachable',
        message: unreachable(port, e),
      };
    }
    const httpStatus = await new Promise<number | null>((resolve) => {
      let req: ClientRequest;
      try {
        req = request({
          method: 'GET',
          path: path.split('#', 1)[0]!.replace(/[^\x21-\x7e]+/g, (run) => encodeURIComponent(run)),
          headers: { host: `localhost:${port}`, accept: 'text/html,*/*' },
          createConnection: () => socket as unknown as Socket,
        });
      } catch {
        resolve(null);
        return;
      }
      const timer = setTimeout(() => req.destroy(), answerMs);
      req.on('response', (res) => {
        clearTimeout(timer);
        resolve(res.statusCode ?? null);
        req.destroy();
      });
      req.on('error', () => {
        clearTimeout(timer);
        resolve(null);
      });
      req.end();
    });
    socket.destroy();
    const message =
      httpStatus === null
        ? `A server accepted the connection on port ${port} but sent no answer within ${answerMs} ms; it may still be starting.`
        : `The server on port ${port} answered HTTP ${httpStatus}.`;
    return { port, listening: true, httpStatus, status: 'ready', message };
  }

  /**
   * A byte stream to `port` inside the running computer (the preview relay's transport).
   * NOT_RUNNING when no computer runs; NOT_FOUND with `reason: 'refused'` when nothing listens.
   */
  async openPort(port: number): Promise<Duplex> {
    const c = this.host.computer;
    if (c?.lifecycle !== 'running') {
      throw new PaddockError('NOT_RUNNING', 'No computer is running; launch one with launch_computer.');
    }
    return this.connector.open(c, port);
  }

  /** Relayed connections open right now (diagnostics and tests). */
  get openConnections(): number {
    return this.connector.openConnections;
  }

  /** Per open relayed connection: bytes received from the guest and waiting for the client. */
  connectionStats(): { stream: number; receivedBytes: number; bufferedBytes: number }[] {
    return this.connector.stats();
  }

  private idle(navigation = 0): PreviewState {
    return {
      path: null,
      url: null,
      port: this.host.computer ? this.configuredPort() : null,
      status: 'idle',
      message: null,
      navigation,
      jobId: null,
      jobEnded: null,
    };
  }

  private set(state: PreviewState & { generation: number | null }): void {
    this.current = state;
    this.changes.emit(this.state());
  }
}

/** Checks a port navigate_preview was given. */
export function checkPreviewPort(port: number): number {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `The preview port ${port} is not a TCP port; pass 1 to 65535 (get_computer_status lists the ports the computer listens on).`,
    );
  }
  return port;
}

/** What a person or agent reads when the preview port cannot be reached. */
export function unreachable(port: number, e: unknown): string {
  if (isPaddockError(e) && e.code === 'NOT_FOUND' && e.details.reason === 'refused') {
    return `Nothing is listening on port ${port} inside the computer. Start a web server there, e.g. \`python3 -m http.server ${port}\` in a terminal or with run_command, then reload.`;
  }
  const why = e instanceof Error ? e.message : String(e);
  return `The preview could not reach port ${port} inside the computer: ${why}`;
}
