import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT, startServe, tempProject } from '../helpers/paddock-process.js';

const CONFORMANCE = join(
  REPO_ROOT,
  'node_modules',
  '@modelcontextprotocol',
  'conformance',
  'dist',
  'index.js',
);
const BASELINE = join(REPO_ROOT, 'test', 'fixtures', 'conformance-baseline.yml');

describe('MCP conformance suite (0.1.13) over Streamable HTTP', () => {
  it('passes every server scenario outside the committed baseline of fixture-only scenarios', async () => {
    // The suite has no way to send a bearer token, so this server runs with auth none (loopback only).
    const project = tempProject('server:\n  auth: none\n');
    const serve = await startServe(project);
    try {
      const { code, output } = await new Promise<{ code: number | null; output: string }>(
        (resolve, reject) => {
          const child = spawn(
            process.execPath,
            [CONFORMANCE, 'server', '--url', `${serve.url}/mcp`, '--expected-failures', BASELINE],
            {
              cwd: project.dir,
              stdio: ['ignore', 'pipe', 'pipe'],
            },
          );
          let output = '';
          child.stdout.on('data', (d: Buffer) => {
            output += d.toString();
          });
          child.stderr.on('data', (d: Buffer) => {
            output += d.toString();
          });
          child.on('error', reject);
          child.on('close', (c) => resolve({ code: c, output }));
        },
      );
      const summary = output.slice(output.indexOf('=== SUMMARY ==='));
      assert.equal(code, 0, `conformance failed:\n${summary}`);
      assert.match(output, /dns-rebinding-protection/);
      assert.match(output, /Baseline check passed/);
    } finally {
      await serve.stop();
      project.cleanup();
    }
  });
});
