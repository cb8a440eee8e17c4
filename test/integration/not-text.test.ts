import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { connectHttp } from '../helpers/clients.js';
import { startServe, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';

/** The refusal whatever its form: a JSON-RPC error, or a tool result that says INVALID_ARGUMENT. */
async function refusal(call: Promise<unknown>): Promise<string> {
  try {
    const result = (await call) as { isError?: boolean; content?: { text?: string }[] };
    assert.equal(result.isError, true, 'the call is refused');
    return result.content?.map((c) => c.text ?? '').join('') ?? '';
  } catch (e) {
    return (e as Error).message;
  }
}

describe('strings that are not text', () => {
  it('refuses paths with a lone surrogate or a non-character, sent as JSON escapes, before any file exists', async () => {
    const project = tempProject('computer:\n  defaultProfile: shell\n');
    const serve = await startServe(project);
    try {
      const client = await connectHttp(serve.url, serve.token);
      await client.callTool({ name: 'run_command', arguments: { script: 'true' } });
      await pollUntil(async () => {
        const s = await client.callTool({ name: 'get_computer_status', arguments: {} });
        return (s.structuredContent as { lifecycle: string }).lifecycle === 'running';
      }, 'the computer to run');
      // JSON.stringify writes these as \ud800 and \ufffe escapes on the wire
      for (const [path, kind] of [
        ['/workspace/a\ud800b.txt', /lone UTF-16 surrogate \(U\+D800\)/],
        ['/workspace/c\ufffed.txt', /non-character U\+FFFE/],
        ['/workspace/e\u{10FFFF}.txt', /non-character U\+10FFFF/],
      ] as const) {
        const message = await refusal(
          client.callTool({ name: 'write_file', arguments: { path, content: 'x' } }),
        );
        assert.match(message, /INVALID_ARGUMENT|Invalid arguments/);
        assert.match(message, kind);
      }
      const memory = await refusal(
        client.callTool({ name: 'save_memory', arguments: { content: 'ok', tags: ['x\udfff'] } }),
      );
      assert.match(memory, /tags\.0: a lone UTF-16 surrogate/);
      const listing = await client.callTool({
        name: 'run_command',
        arguments: { script: 'ls -A /workspace | wc -l', waitMs: 10_000 },
      });
      assert.equal((listing.structuredContent as { stdout: string }).stdout.trim(), '0');
      await client.close();
    } finally {
      await serve.stop('SIGKILL');
      project.cleanup();
    }
  });
});
