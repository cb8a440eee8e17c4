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
  REPO_ROOT,
  runCli,
  type ServeProcess,
  startServe,
  type TempProject,
  tempProject,
} from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';
import { type LocalServer, startServer } from '../unit/net/helpers.js';

const UI_INDEX = join(REPO_ROOT, 'dist', 'ui', 'index.html');

type Json = Record<string, unknown>;

function config(port: number, allow: string[], extra = ''): string {
  return `policy:
  http:
    allow: ${JSON.stringify(allow)}
    hosts: { stub.test: 127.0.0.1, one.ask.test: 127.0.0.1, two.ask.test: 127.0.0.1, three.ask.test: 127.0.0.1, four.ask.test: 127.0.0.1 }
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

  it('a question ends when its program gives up the connection', async () => {
    const gaveUp = await job(
      `curl -sS --max-time 2 http://four.ask.test:${stub.port}/impatient; echo "curl=$?"`,
    );
    assert.match(String(gaveUp.stdout), /curl=28/);
    const ended = await pollUntil(
      async () => {
        const r = await runCli(project, ['approvals', 'list', '--all', '--json']);
        const list = JSON.parse(r.stdout || '[]') as { tool: string; status: string }[];
        const mine = list.find((a) => a.tool === `egress:four.ask.test:${stub.port}`);
        return mine && mine.status !== 'pending' ? mine : null;
      },
      'the abandoned question to end',
      30_000,
    );
    assert.equal(ended?.status, 'cancelled');
  });

  it('"always", decided from the CLI, becomes a rule every later computer is decided with', async () => {
    const started = await tool('run_command', {
      script: `curl -sS http://three.ask.test:${stub.port}/always`,
      waitMs: 0,
      timeoutMs: 120_000,
    });
    const pending = await pollUntil(
      async () => {
        const r = await runCli(project, ['approvals', 'list', '--json']);
        const list = JSON.parse(r.stdout || '[]') as { id: string; tool: string }[];
        return list.find((a) => a.tool === `egress:three.ask.test:${stub.port}`) ?? null;
      },
      'the question in `paddock approvals list`',
      60_000,
    );
    const approve = await runCli(project, ['approvals', 'approve', pending!.id, '--always']);
    assert.equal(approve.code, 0, approve.stderr);
    const done = await pollUntil(
      async () => {
        const now = await tool('read_job', { jobId: started.jobId });
        return now.terminationObserved ? now : null;
      },
      'the job after the CLI answer',
      60_000,
    );
    assert.match(String(done?.stdout), /hi \/always/);
    const rules = await runCli(project, ['approvals', 'rules', '--json']);
    assert.match(rules.stdout, /egress:three\.ask\.test/);
    // a new generation asks nobody: the rule decides
    await tool('launch_computer', { profileId: 'net' });
    await pollUntil(
      async () => (await tool('get_computer_status', {})).lifecycle === 'running',
      'the relaunched computer',
      60_000,
    );
    const later = await job(`curl -sS http://three.ask.test:${stub.port}/later`);
    assert.match(String(later.stdout), /hi \/later/);
    const list = await runCli(project, ['approvals', 'list', '--json']);
    assert.deepEqual(JSON.parse(list.stdout || '[]'), []);
  });

  it('with no dock page open to ask, the connection is refused at once and the job reads why', async () => {
    await page.close();
    // a question asked while the page was still closing waits; curl gives up on it, which ends it
    const refused = await pollUntil(
      async () => {
        const r = await job(`curl -sS --max-time 3 http://two.ask.test:${stub.port}/nobody`);
        return /no dock page was open/.test(String(r.stdout)) ? r : null;
      },
      'the question to be refused with nobody to ask',
      60_000,
    );
    assert.match(String(refused?.stderr), /paddock: egress to two\.ask\.test:\d+ refused/);
    assert.deepEqual(refused?.egressRefused, [
      { host: 'two.ask.test', port: stub.port, rule: `http.ask[0]=*.ask.test:${stub.port}` },
    ]);
    // nothing is left waiting: a question whose program gave up ended with it
    await pollUntil(
      async () => {
        const r = await runCli(project, ['approvals', 'list', '--json']);
        return (JSON.parse(r.stdout || '[]') as unknown[]).length === 0;
      },
      'no question left waiting',
      30_000,
    );
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
