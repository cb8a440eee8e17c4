import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebRoute, WebUpgradeRoute } from '../app.js';

/** What the preview routes need: the relay (relay.ts). */
export interface PreviewHandler {
  handlePreview(req: IncomingMessage, res: ServerResponse): Promise<void>;
  handlePreviewUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void>;
}

/**
 * The preview's base path: `/preview/<capability>`. Pages served by the computer run in a
 * sandboxed frame with an opaque origin, so their requests (scripts, images, websockets) carry
 * no dock cookie; the unguessable path segment is their credential instead. It is new at every
 * start and only the signed-in dock page learns it.
 */
export function newPreviewBasePath(): string {
  return `/preview/${randomBytes(18).toString('base64url')}`;
}

/** HTTP and websocket routes relaying `<basePath>/…` to the computer's preview port. */
export function previewRoutes(
  basePath: string,
  preview: PreviewHandler,
): { route: WebRoute; upgrade: WebUpgradeRoute } {
  const match = (_req: IncomingMessage, url: URL) =>
    url.pathname === basePath || url.pathname.startsWith(`${basePath}/`);
  return {
    route: { match, capability: true, handle: (req, res) => preview.handlePreview(req, res) },
    upgrade: {
      match,
      capability: true,
      handle: (req, socket, head) => {
        void preview.handlePreviewUpgrade(req, socket, head).catch(() => socket.destroy());
      },
    },
  };
}
