/**
 * The preview as the chat view shows it: the page's HTML fetched through the computer's
 * preview relay on the server side, because the view may not reach Paddock (or anything)
 * over the network. The view renders it in a frame without scripts; images and styles it links
 * are not loaded there (the dock shows the live page).
 */
import { request } from 'node:http';
import type { Socket } from 'node:net';
import type { ComputerManager } from '../../computer/manager.js';
import { checkPreviewPath, checkPreviewPort } from '../../computer/preview/preview-service.js';
import { PaddockError } from '../../shared/errors.js';

/** Most bytes of a page the view is sent. */
export const PREVIEW_SNAPSHOT_BYTES = 262_144;
/** How long the page may take to answer. */
const ANSWER_MS = 5000;

/** One read of the preview page, as view_fetch_preview answers it. */
export interface PreviewSnapshot {
  [key: string]: unknown;
  port: number;
  path: string;
  httpStatus: number;
  contentType: string | null;
  /** The page's text (HTML or plain text); null for other content types. */
  text: string | null;
  truncated: boolean;
}

/** GETs `path` on `port` inside the running computer, at most {@link PREVIEW_SNAPSHOT_BYTES}. */
export async function previewSnapshot(
  manager: ComputerManager,
  path: string,
  port: number,
  signal: AbortSignal,
): Promise<PreviewSnapshot> {
  checkPreviewPath(path);
  checkPreviewPort(port);
  const socket = await manager.preview.openPort(port);
  return new Promise<PreviewSnapshot>((resolve, reject) => {
    const fail = (why: string) =>
      reject(
        new PaddockError(
          'UPSTREAM_ERROR',
          `The preview server on port ${port} ${why}; check that it runs (get_computer_status lists the ports) and try again.`,
          { port },
        ),
      );
    const req = request({
      method: 'GET',
      path: path.split('#', 1)[0]!.replace(/[^\x21-\x7e]+/g, (run) => encodeURIComponent(run)),
      headers: { host: `localhost:${port}`, accept: 'text/html,text/plain;q=0.9,*/*;q=0.1' },
      createConnection: () => socket as unknown as Socket,
      signal,
    });
    const timer = setTimeout(() => {
      req.destroy();
      fail(`sent no answer within ${ANSWER_MS} ms`);
    }, ANSWER_MS);
    req.on('error', (e) => {
      clearTimeout(timer);
      if (signal.aborted)
        reject(new PaddockError('TIMEOUT', 'The call was cancelled before the page arrived.'));
      else fail(`could not be read (${e.message})`);
    });
    req.on('response', (res) => {
      const contentType = res.headers['content-type'] ?? null;
      const textual = contentType === null || /^(text\/|application\/(xhtml\+)?xml)/i.test(contentType);
      const chunks: Buffer[] = [];
      let bytes = 0;
      let truncated = false;
      const done = () => {
        clearTimeout(timer);
        req.destroy();
        const body = Buffer.concat(chunks);
        resolve({
          port,
          path,
          httpStatus: res.statusCode ?? 0,
          contentType,
          text: textual ? body.toString('utf8') : null,
          truncated,
        });
      };
      res.on('data', (chunk: Buffer) => {
        if (!textual || truncated) return;
        const room = PREVIEW_SNAPSHOT_BYTES - bytes;
        if (chunk.length >= room) {
          chunks.push(chunk.subarray(0, room));
          bytes += room;
          truncated = true;
          done();
          return;
        }
        chunks.push(chunk);
        bytes += chunk.length;
      });
      res.on('end', done);
      res.on('error', done);
    });
    req.end();
  });
}
