/**
 * The preview relay: HTTP requests and upgrades under the preview's base path go to a server
 * inside the computer, over a byte stream the computer opens to a guest port. Everything HTTP
 * (headers, cookies, the server token, the sandbox CSP, the top-level wrapper) is done here;
 * the computer only connects.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { unreachable } from '../../computer/preview/preview-service.js';
import { isPaddockError } from '../../shared/errors.js';
import { type ProxyTarget, proxyHttp, refuseUpgrade, sendPreviewPage, upgradeHead } from './http.js';
import { isTopLevelOpen, sendPreviewWrapper } from './wrapper.js';

/** What the relay needs from the computer: its preview port and byte streams to guest ports. */
export interface PreviewPorts {
  /** The port previewed by default in the running computer. */
  port(): number;
  /**
   * A byte stream to `port` inside the running computer. Rejects with NOT_RUNNING when no
   * computer runs, NOT_FOUND (`details.reason: 'refused'`) when nothing listens.
   */
  openPort(port: number): Promise<Duplex>;
}

export interface PreviewRelayOptions {
  /** Where the web app mounts the preview; default `/preview` (`` on a preview origin of its own). */
  basePath?: string;
  /** The server's token, never forwarded to the guest. */
  serverToken?: string;
  /** Put every preview response in a CSP sandbox (default true). */
  sandbox?: boolean;
}

/** Relays HTTP and upgrades from the dock's origin to the computer's preview server. */
export class PreviewRelay {
  private readonly basePath: string;

  constructor(
    private readonly ports: PreviewPorts,
    private readonly options: PreviewRelayOptions = {},
  ) {
    this.basePath = (options.basePath ?? '/preview').replace(/\/+$/, '');
  }

  /**
   * Relays one HTTP request to the preview server. `path` is the guest path with its query
   * (default: the request URL without the base path); `port` defaults to the preview port.
   */
  async handlePreview(
    req: IncomingMessage,
    res: ServerResponse,
    path?: string,
    port?: number,
  ): Promise<void> {
    if (path === undefined && isTopLevelOpen(req)) {
      sendPreviewWrapper(req, res, this.basePath);
      return;
    }
    const target = this.target(path ?? this.guestPathOf(req.url), port ?? this.ports.port());
    let socket: Duplex;
    try {
      socket = await this.ports.openPort(target.port);
    } catch (e) {
      if (notRunning(e)) sendPreviewPage(res, 503, 'No computer is running', noComputer());
      else sendPreviewPage(res, 502, `Nothing answers on port ${target.port}`, unreachable(target.port, e));
      return;
    }
    try {
      proxyHttp(socket, req, res, target);
    } catch (e) {
      socket.destroy();
      sendPreviewPage(res, 400, 'The preview cannot relay this request', (e as Error).message);
    }
  }

  /** Relays a WebSocket (or other) upgrade to the preview server, bytes both ways. */
  async handlePreviewUpgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    path?: string,
    port?: number,
  ): Promise<void> {
    socket.on('error', () => socket.destroy());
    const target = this.target(path ?? this.guestPathOf(req.url), port ?? this.ports.port());
    let guest: Duplex;
    try {
      guest = await this.ports.openPort(target.port);
    } catch (e) {
      refuseUpgrade(
        socket,
        notRunning(e) ? 503 : 502,
        notRunning(e) ? noComputer() : unreachable(target.port, e),
      );
      return;
    }
    if (socket.destroyed) {
      guest.destroy();
      return;
    }
    guest.on('error', () => socket.destroy());
    socket.on('close', () => guest.destroy());
    guest.on('close', () => socket.destroy());
    guest.write(upgradeHead(req, target));
    if (head.length > 0) guest.write(head);
    guest.pipe(socket);
    socket.pipe(guest);
  }

  private target(path: string, port: number): ProxyTarget {
    return {
      // Characters an HTTP request line cannot carry are percent-encoded (UTF-8).
      path: path.replace(/[^\x21-\x7e]+/g, (run) => encodeURIComponent(run)),
      port,
      basePath: this.basePath,
      serverToken: this.options.serverToken,
      sandbox: this.options.sandbox !== false,
    };
  }

  /** The guest path of a request URL under the base path. */
  private guestPathOf(url: string | undefined): string {
    const raw = url ?? '/';
    const base = this.basePath;
    const under = base !== '' && (raw === base || raw.startsWith(`${base}/`) || raw.startsWith(`${base}?`));
    const rest = under ? raw.slice(base.length) : raw;
    return rest.startsWith('/') ? rest : `/${rest}`;
  }
}

function notRunning(e: unknown): boolean {
  return isPaddockError(e) && e.code === 'NOT_RUNNING';
}

function noComputer(): string {
  return 'No computer is running, so there is nothing to preview. Launch one from the dock (or with launch_computer), start a web server in it, then reload.';
}
