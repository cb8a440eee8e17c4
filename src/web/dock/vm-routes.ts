/**
 * The files a dock page needs to host a browser computer: the emulator's WebAssembly (from the
 * v86 package) and the checked image. Signed-in pages only, like the page itself.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type BrowserImage, IMAGE_FILES, STATE_FILE } from '../../computer/backend/browser/image.js';
import type { WebRoute } from '../app.js';
import { sendText } from './html.js';
import { VM_ASSET_PATH } from './vm-hosts.js';

/** The emulator's wasm in the installed v86 package. */
function v86Wasm(): string {
  return join(dirname(createRequire(import.meta.url).resolve('v86')), 'v86.wasm');
}

/** GET /dock/vm/v86.wasm and /dock/vm/image/<file> (the snapshot too, when it matches its manifest). */
export function vmRoutes(image: BrowserImage): WebRoute[] {
  const files = new Map<string, { path: () => string; type: string }>([
    [`${VM_ASSET_PATH}v86.wasm`, { path: v86Wasm, type: 'application/wasm' }],
    ...([...IMAGE_FILES, STATE_FILE] as const).map(
      (f) =>
        [
          `${VM_ASSET_PATH}image/${f}`,
          { path: () => image.path(f), type: 'application/octet-stream' },
        ] as const,
    ),
  ]);
  return [
    {
      match: (req, url) => req.method === 'GET' && files.has(url.pathname),
      handle: async (_req, res, url) => {
        const file = files.get(url.pathname)!;
        if (url.pathname.includes('/image/')) {
          const check = image.check();
          if (!check.ok) return sendText(res, 503, check.reason);
          if (url.pathname.endsWith(`/${STATE_FILE}`) && !check.state)
            return sendText(res, 404, 'The image has no usable snapshot; the machine boots cold.');
        }
        let body: Buffer;
        try {
          body = await readFile(file.path());
        } catch {
          return sendText(
            res,
            404,
            'Not found; reinstall the dependencies (npm install) or rebuild the image.',
          );
        }
        res.writeHead(200, {
          'content-type': file.type,
          'content-length': String(body.length),
          'x-content-type-options': 'nosniff',
          'cache-control': 'no-cache',
        });
        res.end(body);
      },
    },
  ];
}
