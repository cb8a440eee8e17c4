import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ServeProcess, startServe, type TempProject, tempProject } from '../helpers/paddock-process.js';

async function initialize(url: string, authorization?: string): Promise<{ status: number; message: string }> {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(authorization ? { authorization } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  });
  const body = (await res.json()) as { error?: { message?: string } };
  return { status: res.status, message: body.error?.message ?? '' };
}

describe('what /mcp tells a client whose token is missing or wrong', () => {
  let project: TempProject;
  let serve: ServeProcess;
  before(async () => {
    project = tempProject();
    serve = await startServe(project);
  });
  after(async () => {
    await serve?.stop();
    project?.cleanup();
  });

  it('a wrong token is called wrong, with where the right one is', async () => {
    const r = await initialize(serve.url, 'Bearer not-the-token');
    assert.equal(r.status, 401);
    assert.match(r.message, /The bearer token is wrong/);
    assert.match(r.message, /file "token" in the data directory/);
    assert.match(r.message, /paddock status/);
  });

  it('a missing token is called missing, with how to send it', async () => {
    const r = await initialize(serve.url);
    assert.equal(r.status, 401);
    assert.match(r.message, /No bearer token/);
    assert.match(r.message, /Authorization: Bearer/);
  });
});
