/**
 * The computer view as an MCP resource: `ui://paddock/computer.html`, one self-contained HTML
 * file (scripts and styles inline, built by Vite from src/web/app-view). It carries no
 * credential and loads nothing: it declares no CSP domains, so a host gives it the extension's
 * restrictive default (no network at all), and everything it shows arrives through the host's
 * tool-call bridge.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ProtocolError,
  ProtocolErrorCode,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { COMPUTER_VIEW_URI, VIEW_MIME_TYPE } from './extension.js';

/** Where the view's HTML comes from (read once, on the first request). */
export interface AppViewSource {
  html(): Promise<string>;
}

/** dist/app-view/computer.html of this build (this file is compiled to dist/src/mcp/app/). */
export function builtViewPath(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'app-view', 'computer.html');
}

/** The built view, read from `path` the first time it is asked for. */
export function fileAppView(path = builtViewPath()): AppViewSource {
  let loaded: Promise<string> | undefined;
  return {
    html() {
      loaded ??= readFile(path, 'utf8').catch((e: unknown) => {
        loaded = undefined;
        throw new Error(
          `The computer view is not built (${path}: ${(e as Error).message}); run \`npm run build\`.`,
        );
      });
      return loaded;
    },
  };
}

/** The view's `_meta.ui`: a border, and no network domains (the restrictive default CSP). */
const VIEW_UI_META = { ui: { prefersBorder: true } };

const LISTED = {
  uri: COMPUTER_VIEW_URI,
  name: 'paddock-computer',
  title: 'Paddock computer',
  description:
    "The computer in the chat: its terminal, the output of a job, the preview and the calls waiting for the person's approval.",
  mimeType: VIEW_MIME_TYPE,
  _meta: VIEW_UI_META,
};

/**
 * Serves `resources/list` and `resources/read` on one server instance; `apps` says whether the
 * request's client declared MCP Apps (others list no resources, as before).
 */
export function installViewResource(
  server: Server,
  view: AppViewSource,
  apps: (ctx: ServerContext) => boolean,
): void {
  server.setRequestHandler('resources/list', async (_request, ctx) => ({
    resources: apps(ctx) ? [LISTED] : [],
  }));
  server.setRequestHandler('resources/read', async (request) => {
    if (request.params.uri !== COMPUTER_VIEW_URI)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `No resource "${request.params.uri.slice(0, 200)}"; this server has ${COMPUTER_VIEW_URI}.`,
      );
    const text = await view.html();
    return {
      contents: [{ uri: COMPUTER_VIEW_URI, mimeType: VIEW_MIME_TYPE, text, _meta: VIEW_UI_META }],
    };
  });
}
