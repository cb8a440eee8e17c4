/** What the composition root's files share: the version and closing in reverse order. */
import type { Logger } from '../shared/logger.js';

/** Paddock's version, from package.json. */
export const VERSION = '0.1.0';

export type Closer = () => Promise<void> | void;

/** Runs closers last-first; one that fails is logged and the others still run. */
export async function closeInReverse(closers: Closer[], logger: Logger): Promise<void> {
  for (const close of closers.splice(0).reverse()) {
    try {
      await close();
    } catch (e) {
      logger.warn('paddock.close_failed', { error: (e as Error).message });
    }
  }
}
