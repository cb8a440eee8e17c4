/**
 * Who counts as an MCP Apps client, and what `_meta` each tool gets: a declaration without the
 * HTML profile, or a malformed one, is a plain client; only the four model tools point at the
 * view and only the view's tools are `visibility: ["app"]`. The built view file, when missing,
 * is a clear error that names the build.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  appToolMeta,
  COMPUTER_VIEW_URI,
  declaresApps,
  TOOLS_WITH_VIEW,
} from '../../../src/mcp/app/extension.js';
import { fileAppView } from '../../../src/mcp/app/resource.js';

const UI = 'io.modelcontextprotocol/ui';

describe('MCP Apps declarations and tool _meta', () => {
  it('only a declaration that lists the mcp-app HTML profile makes an apps client', () => {
    assert.equal(declaresApps({ extensions: { [UI]: { mimeTypes: ['text/html;profile=mcp-app'] } } }), true);
    for (const caps of [
      undefined,
      null,
      {},
      { extensions: {} },
      { extensions: { [UI]: {} } },
      { extensions: { [UI]: { mimeTypes: ['text/html'] } } },
      { extensions: { [UI]: { mimeTypes: 'text/html;profile=mcp-app' } } },
      { extensions: { 'io.modelcontextprotocol/tasks': { mimeTypes: ['text/html;profile=mcp-app'] } } },
      { experimental: { [UI]: { mimeTypes: ['text/html;profile=mcp-app'] } } },
    ])
      assert.equal(declaresApps(caps), false, JSON.stringify(caps));
  });

  it('points the four model tools at the view, hides the view tools from the model, leaves the rest alone', () => {
    for (const name of TOOLS_WITH_VIEW) {
      const meta = appToolMeta({ name });
      assert.deepEqual(meta, { ui: { resourceUri: COMPUTER_VIEW_URI }, 'ui/resourceUri': COMPUTER_VIEW_URI });
    }
    assert.deepEqual(appToolMeta({ name: 'view_watch_computer', appOnly: true }), {
      ui: { resourceUri: COMPUTER_VIEW_URI, visibility: ['app'] },
    });
    for (const name of ['read_file', 'save_memory', 'http_get', 'list_terminals'])
      assert.equal(appToolMeta({ name }), undefined, name);
  });

  it('reads the built view once, and says to build it when it is missing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-view-'));
    try {
      const path = join(dir, 'computer.html');
      const view = fileAppView(path);
      await assert.rejects(view.html(), /not built .*npm run build/);
      writeFileSync(path, '<html>first</html>');
      assert.equal(await view.html(), '<html>first</html>');
      writeFileSync(path, '<html>second</html>');
      assert.equal(await view.html(), '<html>first</html>', 'kept from the first read');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
