/**
 * The dock's file browser over HTTP (signed-in routes; the app checks Host and Origin): list a
 * directory, download a file, upload a small one, and list what changed in /workspace since the
 * computer launched. Every operation is a computer tool called through the gateway as the person
 * at the dock (list_files, read_file, write_file, run_command), so the policy decides and each
 * call is an audit row; this file only translates.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebRoute } from '../app.js';
import type { DockTools } from './sources.js';

export const FILES_PATH = '/dock/files';
/** Largest download, in bytes (read 64 KiB at a time). */
export const MAX_DOWNLOAD_BYTES = 16 * 1024 * 1024;
/** Largest upload: what one write_file takes. */
export const MAX_UPLOAD_BYTES = 64 * 1024;
/** Most changed files listed. */
const MAX_CHANGED = 500;
const CALL_TIMEOUT_MS = 30_000;

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

/** A tool's structured answer, or the error it reported as `{ code, message }`. */
async function callTool(
  tools: DockTools,
  name: string,
  args: Record<string, unknown>,
): Promise<{ ok: true; value: Record<string, unknown> } | { ok: false; code: string; message: string }> {
  const result = await tools.call(name, args, AbortSignal.timeout(CALL_TIMEOUT_MS));
  const value = (result.structuredContent ?? textJson(result.content)) as Record<string, unknown>;
  if (result.isError) {
    return {
      ok: false,
      code: String(value.code ?? 'INTERNAL'),
      message: String(value.message ?? `${name} failed.`),
    };
  }
  return { ok: true, value };
}

/** An error result's body: `{ code, message }` as the JSON text of its first content item. */
function textJson(content: unknown): Record<string, unknown> {
  const text = Array.isArray(content) ? (content[0] as { text?: unknown } | undefined)?.text : undefined;
  try {
    return typeof text === 'string' ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    return { message: String(text) };
  }
}

async function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** A path from the query: absolute, else the workspace. */
function pathOf(url: URL): string {
  const p = url.searchParams.get('path') ?? '/workspace';
  return p.startsWith('/') ? p : `/workspace/${p}`;
}

/** The routes of the file browser; `launchedAt` is when the watched computer launched (epoch ms). */
export function filesRoutes(tools: DockTools, launchedAt: () => number | null): WebRoute[] {
  const at =
    (sub: string) =>
    (req: IncomingMessage, url: URL, method = 'GET') =>
      url.pathname === `${FILES_PATH}/${sub}` && req.method === method;
  return [
    {
      match: (req, url) => at('list')(req, url),
      handle: async (_req, res, url) => {
        const r = await callTool(tools, 'list_files', { path: pathOf(url), limit: 500 });
        if (!r.ok) return sendJson(res, 400, r);
        sendJson(res, 200, r.value);
      },
    },
    {
      match: (req, url) => at('download')(req, url),
      handle: async (_req, res, url) => {
        const path = pathOf(url);
        const parts: Buffer[] = [];
        let offset = 0;
        for (;;) {
          const r = await callTool(tools, 'read_file', {
            path,
            encoding: 'base64',
            offset,
            byteLimit: 65_536,
          });
          if (!r.ok) return sendJson(res, 400, r);
          const bytes = Buffer.from(String(r.value.content ?? ''), 'base64');
          parts.push(bytes);
          offset += bytes.length;
          if (offset > MAX_DOWNLOAD_BYTES) {
            return sendJson(res, 413, {
              code: 'LIMIT_EXCEEDED',
              message: `${path} is larger than ${MAX_DOWNLOAD_BYTES} bytes; copy it out with run_command (e.g. into a preview server's directory).`,
            });
          }
          if (r.value.eof === true || bytes.length === 0) break;
        }
        const name = path.split('/').pop() || 'download';
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(name)}`,
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
        });
        res.end(Buffer.concat(parts));
      },
    },
    {
      match: (req, url) => at('upload')(req, url, 'POST'),
      handle: async (req, res, url) => {
        const body = await readBody(req, MAX_UPLOAD_BYTES);
        if (!body) {
          return sendJson(res, 413, {
            code: 'LIMIT_EXCEEDED',
            message: `Uploads take at most ${MAX_UPLOAD_BYTES / 1024} KiB (one write_file); split the file or fetch it from inside the computer.`,
          });
        }
        const overwrite = url.searchParams.get('overwrite') === '1';
        const r = await callTool(tools, 'write_file', {
          path: pathOf(url),
          content: body.toString('base64'),
          encoding: 'base64',
          overwrite,
        });
        if (!r.ok) return sendJson(res, r.code === 'FILE_EXISTS' ? 409 : 400, r);
        sendJson(res, 200, r.value);
      },
    },
    {
      match: (req, url) => at('changed')(req, url),
      handle: async (_req, res) => {
        const since = launchedAt();
        if (since === null)
          return sendJson(res, 409, { code: 'NOT_RUNNING', message: 'No computer is running.' });
        const script = `find /workspace -xdev -newermt @${Math.floor(since / 1000)} -type f -printf '%T@ %s %p\\n' 2>/dev/null | sort -rn | head -n ${MAX_CHANGED}`;
        const r = await callTool(tools, 'run_command', { script, waitMs: 10_000, timeoutMs: 20_000 });
        if (!r.ok) return sendJson(res, 400, r);
        const files = String(r.value.stdout ?? '')
          .split('\n')
          .filter(Boolean)
          .map((line) => {
            const [mtime, size, ...rest] = line.split(' ');
            return { path: rest.join(' '), size: Number(size), mtimeMs: Math.round(Number(mtime) * 1000) };
          });
        sendJson(res, 200, { since, files, complete: r.value.terminationObserved === true });
      },
    },
  ];
}
