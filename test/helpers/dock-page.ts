/** A real Chromium page signed in to a running server's dock, for the dock's e2e tests. */
import { type Browser, chromium, type Page } from 'playwright-core';
import { CHROMIUM } from './clients.js';
import type { ServeProcess } from './paddock-process.js';

/** Launches Debian's chromium, signs in with the server's login link and waits for the live socket. */
export async function signedInDock(
  serve: ServeProcess,
  viewport?: { width: number; height: number },
): Promise<{ browser: Browser; page: Page }> {
  const browser = await chromium.launch(CHROMIUM);
  const page = await (await browser.newContext(viewport ? { viewport } : {})).newPage();
  await page.goto(await serve.loginLink());
  await page.waitForURL(`${serve.url}/`);
  await page.getByTestId('connection').filter({ hasText: 'Live' }).waitFor();
  return { browser, page };
}
