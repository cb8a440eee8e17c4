/**
 * The dock: the browser page where a person watches and uses the computer the agent uses.
 * `createDock` builds its routes, its websocket endpoint and its sign-in; `paddock serve`
 * passes them to the WebApp and prints `loginLink(base)` at start.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuditStore } from '../../audit/types.js';
import type { BrowserImage } from '../../computer/backend/browser/image.js';
import { PaddockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { OWNER } from '../../shared/principal.js';
import type { Gateway } from '../../tools/gateway.js';
import type { CallerContext } from '../../tools/tool.js';
import type { SessionValidator, WebRoute, WebUpgradeRoute } from '../app.js';
import { approvalsPageRoute } from './approvals-page.js';
import { dockCheckpointCalls } from './checkpoint-calls.js';
import type { ClientLimits } from './client.js';
import { filesRoutes } from './files-routes.js';
import { DockHub, type DockLauncher } from './hub.js';
import { LaunchNonces } from './launch-page.js';
import { DockLogin, type DockLoginOptions } from './login.js';
import type { DockStatus } from './protocol.js';
import { dockRoutes, sendSignIn } from './routes.js';
import type { DockAgents, DockApprovals, DockComputer, DockTools, LaunchLinkBoot } from './sources.js';
import { defaultUiDir, UiAssets } from './static-assets.js';
import { castRoute, type DockToolReview } from './trust.js';
import type { DockVmHosts } from './vm-hosts.js';
import { vmRoutes } from './vm-routes.js';

export { dockAgentsFromService } from './agents-adapter.js';
export { dockApprovalsFromService } from './approvals-adapter.js';
export { type ComputerAdapterOptions, dockComputerFromService } from './computer-adapter.js';
export type * from './sources.js';
export { DockVmHosts } from './vm-hosts.js';

/** Path of the dock's websocket. */
export const DOCK_WS_PATH = '/dock/ws';

/** What the dock is built from. */
export interface DockOptions {
  audit: AuditStore;
  logger: Logger;
  /** Paddock's version (shown in the page). */
  version: string;
  /** The server's auth mode; with `none` there is no sign-in. */
  auth: 'token' | 'none';
  /** The computer; without it the page shows the tools and audit only. */
  computer?: DockComputer | null;
  /** The agents panel's source (see dockAgentsFromService); without it the page has no agents tab. */
  agents?: DockAgents | null;
  /** The approvals panel's source (see dockApprovalsFromService). */
  approvals?: DockApprovals | null;
  /** When given and `launch_computer` is registered, launches from the page are tool calls (audited). */
  gateway?: Gateway | null;
  /** The computer tools the page registers through WebMCP (calls go through the gateway). */
  tools?: DockTools | null;
  /** Directory of the built page; default dist/ui of this build. */
  uiDir?: string;
  /** Marks the session cookie `Secure` (set when the public URL is https). */
  secureCookie?: boolean;
  /** Origins besides this one that the preview iframe may load (a separate preview origin). */
  previewOrigins?: string[];
  login?: DockLoginOptions;
  limits?: Partial<ClientLimits>;
  /** Upstream tools awaiting a person's review. */
  toolReview?: DockToolReview | null;
  /** Whether a tool only reads (the timeline offers no undo of its calls). */
  readOnlyTool?: (tool: string) => boolean;
  /** Browser computers: the pages that host them and the image they boot (both or neither). */
  browser?: { hosts: DockVmHosts; image: BrowserImage } | null;
}

/** The dock, ready to hand to the WebApp. */
export interface Dock {
  routes: WebRoute[];
  upgrades: WebUpgradeRoute[];
  /** Validates the session cookie (pass as WebAppOptions.sessions). */
  sessions: SessionValidator;
  /** The sign-in sessions themselves (the OAuth consent page binds its answers to them). */
  login: DockLogin;
  /** The sign-in page for unauthenticated requests (pass as WebAppOptions.unauthorized). */
  unauthorized(req: IncomingMessage, res: ServerResponse, url: URL): void;
  /** A new single-use login link `<base>/login?code=…` (valid ten minutes); `<base>/` without auth. */
  loginLink(baseUrl: string): string;
  hub: DockHub;
  /** Closes every websocket and ends every session. */
  close(): Promise<void>;
}

/** The caller name of the person at the dock. */
export const DOCK_CALLER = 'dock:owner';

/** The Content-Security-Policy of the page. */
export function dockCsp(previewOrigins: readonly string[] = []): string {
  const frames = ["'self'", ...previewOrigins].join(' ');
  return [
    "default-src 'self'",
    // the browser computer's emulator compiles WebAssembly, also at run time (its JIT)
    "script-src 'self' 'wasm-unsafe-eval'",
    // and paces its main loop with a tiny worker it creates from a blob
    "worker-src 'self' blob:",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    `frame-src ${frames}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Builds the dock. */
export function createDock(options: DockOptions): Dock {
  const logger = options.logger.child({ domain: 'dock' });
  const computer = options.computer ?? null;
  const login = new DockLogin(options.login);
  const hub = new DockHub({
    audit: options.audit,
    computer,
    agents: options.agents ?? null,
    approvals: options.approvals ?? null,
    logger,
    version: options.version,
    caller: DOCK_CALLER,
    launch: launcher(options.gateway ?? null, computer),
    bootLink: linkBooter(options.gateway ?? null, computer),
    tools: options.tools ?? null,
    limits: options.limits,
    vmHosts: options.browser?.hosts ?? null,
    toolReview: options.toolReview ?? null,
    checkpoints: dockCheckpointCalls(options.gateway ?? null, computer, DOCK_CALLER),
    ...(options.readOnlyTool ? { readOnlyTool: options.readOnlyTool } : {}),
  });
  const issue = (base: string) => {
    const { code, expiresAt } = login.issueCode();
    return { url: `${base.replace(/\/+$/, '')}/login?code=${code}`, expiresAt };
  };
  const history = options.approvals?.history;
  const routes = [
    ...(options.browser ? vmRoutes(options.browser.image) : []),
    ...(history ? [approvalsPageRoute(history)] : []),
    ...(options.tools && computer ? filesRoutes(options.tools, () => computer.launchedAt?.() ?? null) : []),
    castRoute(computer),
    ...dockRoutes({
      auth: options.auth,
      login,
      hub,
      computer,
      assets: new UiAssets(options.uiDir ?? defaultUiDir(), dockCsp(options.previewOrigins)),
      nonces: new LaunchNonces(),
      logger,
      secureCookie: options.secureCookie ?? false,
      loginLink: issue,
    }),
  ];
  return {
    routes,
    upgrades: [
      {
        requireOrigin: true,
        match: (_req, url) => url.pathname === DOCK_WS_PATH,
        handle: (req, socket, head) => hub.handleUpgrade(req, socket, head),
      },
    ],
    sessions: login,
    login,
    unauthorized: (req, res) => sendSignIn(req, res),
    loginLink: (base) => (options.auth === 'none' ? `${base.replace(/\/+$/, '')}/` : issue(base).url),
    hub,
    async close() {
      login.revokeAll();
      await hub.close();
    },
  };
}

/** Launches through the gateway when `launch_computer` is registered, so the launch is audited. */
function launcher(gateway: Gateway | null, computer: DockComputer | null): DockLauncher | undefined {
  if (!gateway || !computer) return undefined;
  const caller: CallerContext = { caller: DOCK_CALLER, principal: OWNER, via: 'direct', attended: true };
  return async (profileId, options = {}) => {
    if (!gateway.listTools(caller).some((t) => t.name === 'launch_computer'))
      return computer.launch(profileId, options);
    const target = computer.target?.();
    const outcome = await gateway.call(
      'launch_computer',
      { profileId, ...(options.keepWorkspace ? { keepWorkspace: true } : {}) },
      target ? { ...caller, computer: target } : caller,
    );
    if (!outcome.ok) throw outcome.error;
    if (outcome.result.isError) {
      throw new PaddockError(
        'UPSTREAM_ERROR',
        'launch_computer reported an error; see the audit stream for details.',
      );
    }
  };
}

/** What a gateway call answered, or the error it stands for. */
function resultOf(outcome: Awaited<ReturnType<Gateway['call']>>, tool: string): Record<string, unknown> {
  if (!outcome.ok) throw outcome.error;
  if (outcome.result.isError)
    throw new PaddockError('UPSTREAM_ERROR', `${tool} reported an error; see the audit stream for details.`);
  return outcome.result.structured ?? {};
}

/** How long a launch link of a browser profile waits for a dock page to host its computer. */
const PAGE_WAIT_MS = 30_000;

/**
 * Resolves once `profileId` can launch; rejects with its reason after `timeoutMs`. A page that
 * offers to host changes no computer state anyone is told of, so this looks every 250 ms.
 */
async function untilAvailable(computer: DockComputer, profileId: string, timeoutMs: number): Promise<void> {
  const profile = () => computer.profiles().find((p) => p.id === profileId);
  const deadline = Date.now() + timeoutMs;
  while (!profile()?.available) {
    if (Date.now() >= deadline) {
      throw new PaddockError(
        'NOT_RUNNING',
        `No dock page could host the computer within ${timeoutMs / 1000} s: ${profile()?.unavailableReason ?? 'the profile is unavailable'}`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Resolves with the watched computer's status once it is no longer booting. */
function bootEnded(computer: DockComputer): Promise<DockStatus> {
  return new Promise((resolve) => {
    let done = false;
    const check = () => {
      const status = computer.status();
      if (done || status.lifecycle === 'booting') return;
      done = true;
      sub.dispose();
      resolve(status);
    };
    const sub = computer.onChange((change) => {
      if (change.kind === 'status' || change.kind === 'watch') check();
    });
    check();
  });
}

/**
 * Boots a confirmed launch link as two calls through the gateway, audited as the person at the
 * dock: `launch_computer` with the link's profile, then `run_command` with its whole startup
 * script once the computer runs. Without `launch_computer` registered, the computer boots it.
 */
function linkBooter(
  gateway: Gateway | null,
  computer: DockComputer | null,
): ((linkId: string) => Promise<{ boot: Promise<LaunchLinkBoot> }>) | undefined {
  if (!gateway || !computer) return undefined;
  return async (linkId) => {
    const link = await computer.launchLink(linkId);
    const base: CallerContext = { caller: DOCK_CALLER, principal: OWNER, via: 'direct', attended: true };
    const target = computer.target?.();
    const caller = target ? { ...base, computer: target } : base;
    if (!gateway.listTools(caller).some((t) => t.name === 'launch_computer'))
      return { boot: computer.bootLaunchLink(linkId) };
    const launch = async () =>
      resultOf(
        await gateway.call('launch_computer', { profileId: link.profile.id }, caller),
        'launch_computer',
      );
    // A browser profile boots in a dock page, and the page this confirmation leads to is still
    // loading: the launch waits for a page to offer itself instead of being refused at once.
    const waitForPage = computer.hostedByPage?.(link.profile.id) === true && !link.profile.available;
    if (!waitForPage) await launch();
    const boot = (async (): Promise<LaunchLinkBoot> => {
      if (waitForPage) {
        try {
          await untilAvailable(computer, link.profile.id, PAGE_WAIT_MS);
          await launch();
        } catch (e) {
          return { lifecycle: 'failed', bootError: (e as Error).message, jobId: null };
        }
      }
      const status = await bootEnded(computer);
      if (status.lifecycle !== 'running' || !link.startupScript)
        return { lifecycle: status.lifecycle, bootError: status.bootError, jobId: null };
      const job = resultOf(
        await gateway.call(
          'run_command',
          { script: link.startupScript, waitMs: 0, timeoutMs: 300_000 },
          caller,
        ),
        'run_command',
      );
      return { lifecycle: 'running', bootError: null, jobId: String(job.jobId) };
    })();
    return { boot };
  };
}
