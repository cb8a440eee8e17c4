import { PaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { WebApp } from './app.js';

/**
 * Listens on the app's configured port. With `fallback` (a server a bridge started in the
 * background) a taken port gives way to a free one; otherwise it is a clear error.
 */
export async function listenOrFallBack(
  app: WebApp,
  where: { host: string; port: number; fallback: boolean; logger: Logger },
): Promise<{ port: number }> {
  try {
    return await app.listen();
  } catch (e) {
    if (where.fallback && (e as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      where.logger.warn('server.port_taken', { port: where.port, fallback: 'a free port' });
      return app.listen(0);
    }
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `cannot listen on ${where.host}:${where.port} (${(e as Error).message}); pick another --port.`,
    );
  }
}
