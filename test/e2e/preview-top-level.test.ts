/**
 * A preview page opened in its own tab (top-level, not in the dock's frame) must not navigate
 * to another host: not by script, not by <meta refresh>, not by a redirect of its server.
 * Real Chromium, a real computer, a catcher on another loopback address.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { type Browser, chromium } from 'playwright-core';
import { CHROMIUM, connectHttp } from '../helpers/clients.js';
import { startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

/** A guest web server: pages that try to leave, a redirect that tries to, and one that stays. */
function guestServer(catcher: string): string {
  return `
import http.server
PAGES = {
  '/leak-js.html': '<script>location = "${catcher}/stolen?via=js"</script>',
  '/leak-meta.html': '<meta http-equiv="refresh" content="0;url=${catcher}/stolen?via=meta">',
  '/stay.html': '<script>location = "landed.html?via=js"</script>',
  '/landed.html': '<p id="landed">landed</p>',
}
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split('?')[0]
        if path == '/leak-302':
            self.send_response(302)
            self.send_header('Location', '${catcher}/stolen?via=302')
            self.end_headers()
            return
        body = PAGES.get(path)
        if body is None:
            self.send_response(404); self.end_headers(); return
        data = body.encode()
        self.send_response(200)
        self.send_header('Content-Type', 'text/html')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(('0.0.0.0', 8000), H).serve_forever()
`;
}

describe('a preview opened top-level', () => {
  it('keeps script, meta-refresh and redirect navigations of a preview page inside the preview', async () => {
    const hits: string[] = [];
    const catcher = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.end('caught');
    });
    await new Promise<void>((r) => catcher.listen(0, '127.0.0.2', r));
    const catcherUrl = `http://127.0.0.2:${(catcher.address() as AddressInfo).port}`;
    const project = tempProject('computer:\n  defaultProfile: python\n');
    const serve = await startServe(project);
    let browser: Browser | undefined;
    try {
      const agent = await connectHttp(serve.url, serve.token, 'preview-top-level');
      const call = async (name: string, args: Record<string, unknown>) => {
        const r = await agent.callTool({ name, arguments: args });
        assert.notEqual(r.isError, true, `${name}: ${JSON.stringify(r.content)}`);
        return r.structuredContent as Record<string, unknown>;
      };
      await call('launch_computer', { profileId: 'python' });
      await pollUntil(
        async () => (await call('get_computer_status', {})).lifecycle === 'running',
        'the computer to run',
        60_000,
      );
      await call('write_file', {
        path: '/workspace/site.py',
        content: guestServer(catcherUrl),
        overwrite: true,
      });
      await call('run_command', {
        script:
          '(python3 /workspace/site.py >/dev/null 2>&1 &); ' +
          'for i in $(seq 100); do python3 -c "import socket; socket.create_connection((\'127.0.0.1\', 8000), 0.2)" 2>/dev/null && break; sleep 0.1; done',
        waitMs: 10_000,
      });
      const nav = (await call('navigate_preview', { path: '/stay.html' })) as { requested: { url: string } };
      const previewBase = new URL(nav.requested.url, serve.url).href.replace(/\/stay\.html$/, '');

      browser = await chromium.launch(CHROMIUM);
      const context = await browser.newContext();
      for (const leak of ['leak-js.html', 'leak-meta.html', 'leak-302']) {
        const tab = await context.newPage();
        await tab.goto(`${previewBase}/${leak}`).catch(() => undefined);
      }
      // the control: a navigation to the preview itself goes through, so the leaks had their chance
      const tab = await context.newPage();
      await tab.goto(`${previewBase}/stay.html`);
      await pollUntil(
        () => tab.frames().some((f) => f.url().includes('/landed.html')),
        'the in-preview navigation to land',
        90_000,
      );
      for (const p of context.pages()) {
        assert.ok(
          p.frames().every((f) => !f.url().startsWith(catcherUrl)),
          `no frame shows the catcher: ${p.frames().map((f) => f.url())}`,
        );
      }
      assert.deepEqual(hits, [], 'no request reached the other host');
      await agent.close();
    } finally {
      await browser?.close();
      await serve.stop('SIGKILL');
      project.cleanup();
      catcher.close();
    }
  });
});
