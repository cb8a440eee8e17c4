/**
 * A person allows a host on the spot, in a real browser: a real `paddock serve` whose policy
 * asks about `*.ask.test`, a job whose curl waits while the dock shows the question, and the
 * answer "for this computer" letting it (and the next connection) through. With no dock page open
 * the same question is refused at once. Then paddock.yaml is edited under the running server:
 * a tightening cuts new connections, an invalid edit keeps the policy and the log says why.
 */
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { type Browser, chromium, type Page } from 'playwright-core';
import { CHROMIUM, connectHttp } from '../helpers/clients.js';
import {
  pollUntil,
  REPO_ROOT,
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { type LocalServer, startServer } from '../unit/net/helpers.js';

const UI_INDEX = join(REPO_ROOT, 'dist', 'ui', 'index.html');

type Json = Record<string, unknown>;

function config(port: number, allow: string[], extra = ''): string {
  return `policy:
  http:
    allow: ${JSON.stringify(allow)}
    hosts: { stub.test: 127.0.0.1, one.ask.test: 127.0.0.1, two.ask.test: 127.0.0.1 }
    ask: ["*.ask.test:${port}"]
${extra}computer:
  defaultProfile: net
  profiles:
    - id: net
      name: Net
      requires: [bash, curl]
      network: { mode: proxy }
`;
}

describe('a person allows a host while the connection waits, and paddock.yaml reloads', () => {
  let stub: LocalServer;
  let project: TempProject;
  let serve: ServeProcess;
  let browser: Browser;
  let page: Page;
  let client: Client;

  const tool = async (name: string, args: Json): Promise<Json> => {
    const r = (await client.callTool({ name, arguments: args })) as {
      isError?: boolean;
      structuredContent?: Json;
      content: { text: string }[];
    };
    const body = r.structuredContent ?? (JSON.parse(r.content[0]!.text) as Json);
    assert.notEqual(r.isError, true, JSON.stringify(body));
    return body;
  };
  /** Runs `script` as a job and reads it until its end. */
  const job = async (script: string): Promise<Json> => {
    const started = await tool('run_command', { script, waitMs: 0, timeoutMs: 120_000 });
    const done = await pollUntil(
      async () => {
        const now = await tool('read_job', { jobId: started.jobId });
        return now.terminationObserved ? now : null;
      },
      `job ${String(started.jobId)}`,
      120_000,
    );
    return done!;
  };

  before(async () => {
    assert.ok(existsSync(UI_INDEX), `The dock page is not built (${UI_INDEX}); run \`npm run build:ui\`.`);
    stub = await startServer((req, res) => res.end(`hi ${req.url}`));
    project = tempProject(config(stub.port, [`stub.test:${stub.port}`]));
    serve = await startServe(project);
    browser = await chromium.launch(CHROMIUM);
    page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    await page.goto(await serve.loginLink());
    await page.waitForURL(`${serve.url}/`);
    await page.getByTestId('connection').filter({ hasText: 'Live' }).waitFor();
    client = await connectHttp(serve.url, serve.token);
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
    await stub?.close();
  });

  it('the job waits while the dock asks; "allow for this computer" lets it and later connections through, audited with the approval', async () => {
    const started = await tool('run_command', {
      script: `curl -sS http://one.ask.test:${stub.port}/asked`,
      waitMs: 0,
      timeoutMs: 120_000,
    });
    const card = page.getByTestId('approval').filter({ hasText: `egress:one.ask.test:${stub.port}` });
    await card.waitFor({ timeout: 60_000 });
    assert.match((await card.textContent()) ?? '', /one\.ask\.test/);
    const waiting = await tool('read_job', { jobId: started.jobId });
    assert.equal(waiting.terminationObserved, false, 'the connection waits for the answer');
    await card.getByTestId('approve-session').click();
    const done = await pollUntil(
      async () => {
        const now = await tool('read_job', { jobId: started.jobId });
        return now.terminationObserved ? now : null;
      },
      'the job after the answer',
      60_000,
    );
    assert.equal(done?.exitCode, 0, String(done?.stderr));
    assert.match(String(done?.stdout), /hi \/asked/);
    const again = await job(`curl -sS http://one.ask.test:${stub.port}/again`);
    assert.match(String(again.stdout), /hi \/again/, 'allowed for this computer: nobody is asked again');
    const { stdout } = await runCli(project, ['audit', '--tool', 'egress', '--json']);
    const rows = stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { input: string; success: boolean; policyRule: string | null });
    const asked = rows.filter((r) => r.input.includes('one.ask.test'));
    assert.equal(asked.length, 2);
    assert.ok(asked.every((r) => r.success && /^approval:apr_/.test(r.policyRule ?? '')));
    const list = await runCli(project, ['approvals', 'list', '--all', '--json']);
    assert.match(list.stdout, /egress:one\.ask\.test/);
  });

  it('with no dock page open to ask, the connection is refused at once and the job reads why', async () => {
    await page.close();
    const refused = await pollUntil(
      async () => {
        const r = await job(`curl -sS http://two.ask.test:${stub.port}/nobody`);
        return /no dock page was open/.test(String(r.stdout)) ? r : null;
      },
      'the question to be refused with nobody to ask',
      60_000,
    );
    assert.match(String(refused?.stderr), /paddock: egress to two\.ask\.test:\d+ refused/);
    assert.deepEqual(refused?.egressRefused, [
      { host: 'two.ask.test', port: stub.port, rule: `http.ask[0]=*.ask.test:${stub.port}` },
    ]);
  });

  it('a tightening edit of paddock.yaml cuts new connections; an invalid edit keeps the policy and the log says why', async () => {
    const before = await job(`curl -sS http://stub.test:${stub.port}/before`);
    assert.match(String(before.stdout), /hi \/before/);
    writeFileSync(join(project.dir, 'paddock.yaml'), config(stub.port, []));
    const cut = await pollUntil(
      async () => {
        const r = await job(`curl -sS http://stub.test:${stub.port}/after`);
        return /Paddock egress refused stub\.test/.test(String(r.stdout)) ? r : null;
      },
      'the reloaded policy to refuse stub.test',
      30_000,
    );
    assert.deepEqual(cut?.egressRefused, [{ host: 'stub.test', port: stub.port, rule: 'default-deny' }]);
    assert.match(serve.stderr(), /config\.reloaded/);
    // an invalid edit: the running (tightened) policy stays, and the log names the bad entry
    writeFileSync(
      join(project.dir, 'paddock.yaml'),
      config(stub.port, [`stub.test:${stub.port}`], '  tcp:\n    allow: ["no-port.test"]\n'),
    );
    await pollUntil(
      () => /config\.reload_failed/.test(serve.stderr()),
      'the failed reload in the log',
      30_000,
    );
    assert.match(serve.stderr(), /policy\.tcp\.allow\.0/);
    const still = await job(`curl -sS http://stub.test:${stub.port}/still`);
    assert.match(String(still.stdout), /Paddock egress refused stub\.test/);
    // SIGHUP reloads too (the file is fixed again, allowing the host)
    writeFileSync(join(project.dir, 'paddock.yaml'), config(stub.port, [`stub.test:${stub.port}`]));
    serve.child.kill('SIGHUP');
    const back = await pollUntil(
      async () => {
        const r = await job(`curl -sS http://stub.test:${stub.port}/back`);
        return /hi \/back/.test(String(r.stdout)) ? r : null;
      },
      'the fixed policy to allow stub.test again',
      30_000,
    );
    assert.deepEqual(back?.egressRefused, []);
  });
});
