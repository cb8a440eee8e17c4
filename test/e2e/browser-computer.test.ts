/**
 * The browser computer end to end: a signed-in dock page in real Chromium hosts it, an MCP client
 * over HTTP launches it and uses it with the ordinary computer tools, and closing the page ends it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { rows } from '../helpers/audit-rows.js';
import { connectHttp } from '../helpers/clients.js';
import { signedInDock } from '../helpers/dock-page.js';
import { type ServeProcess, startServe, type TempProject, tempProject } from '../helpers/paddock-process.js';
import { pollUntil } from '../helpers/poll.js';
import { pageCall, pageTools } from '../helpers/webmcp-page.js';

const CONFIG = `computer:
  defaultProfile: shell
  autoLaunch: false
  profiles:
    - id: tab
      name: Computer in the tab
      backend: browser
      description: A small Linux in an emulated PC in the dock tab.
`;

type Result = { isError?: boolean; structuredContent?: Record<string, unknown>; content?: unknown };

describe('browser computer (v86 in the dock tab, driven over MCP)', { timeout: 900_000 }, () => {
  let project: TempProject;
  let serve: ServeProcess;
  let client: Client;
  let browser: Browser;
  let page: Page;

  const call = async (name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> => {
    const r = (await client.callTool({ name, arguments: args })) as Result;
    assert.notEqual(r.isError, true, `${name}: ${JSON.stringify(r.content)}`);
    // a large result travels once, as the JSON text of its content
    const text = (r.content as Array<{ text?: string }> | undefined)?.[0]?.text;
    return r.structuredContent ?? (text ? (JSON.parse(text) as Record<string, unknown>) : {});
  };
  /** run_command, then read_job until the job ended: its whole output and exit. */
  const runToEnd = async (script: string) => {
    const r = await call('run_command', { script, waitMs: 10_000 });
    if (r.terminationObserved) return r;
    return (await pollUntil(
      async () => {
        const j = await call('read_job', { jobId: r.jobId, byteLimit: 65_536 });
        return j.terminationObserved ? j : null;
      },
      `job ${String(r.jobId)} to end`,
      120_000,
      250,
    )) as Record<string, unknown>;
  };
  const profile = async () => {
    const { profiles } = (await call('list_profiles')) as { profiles: Record<string, unknown>[] };
    return profiles.find((p) => p.id === 'tab')!;
  };

  before(async () => {
    project = tempProject(CONFIG);
    serve = await startServe(project);
    client = await connectHttp(serve.url, serve.token);
  });

  after(async () => {
    if (serve) process.stderr.write(`server log (tail):\n${serve.stderr().slice(-3000)}\n`);
    await client?.close().catch(() => undefined);
    await browser?.close().catch(() => undefined);
    await serve?.stop();
    project?.cleanup();
  });

  it('is unavailable while no dock page can host it, and says how to get one', async () => {
    const p = await profile();
    assert.equal(p.available, false);
    assert.match(String(p.unavailableReason), /no signed-in dock page/);
  });

  it('boots in the signed-in page once it can host, and runs a command with separate stdout, stderr and exit code', async () => {
    ({ browser, page } = await signedInDock(serve));
    await pollUntil(async () => (await profile()).available === true, 'the profile to be available');
    await call('launch_computer', { profileId: 'tab' });
    const started = Date.now();
    const status = await pollUntil(
      async () => {
        const s = await call('get_computer_status');
        return s.lifecycle === 'booting' ? null : s;
      },
      'the browser computer to boot',
      400_000,
      500,
    );
    assert.equal(status?.lifecycle, 'running', JSON.stringify(status));
    process.stderr.write(`browser computer running after ${Date.now() - started} ms\n`);
    // the page that runs it says so, on the computer it shows
    await page
      .getByTestId('computer-select')
      .selectOption(new URL(String(status?.url)).searchParams.get('computer') ?? '');
    await page.getByTestId('in-this-tab').waitFor({ timeout: 15_000 });
    const job = await runToEnd('echo out-$((6*7)); echo err-line >&2; exit 3');
    assert.equal(job.stdout, 'out-42\n');
    assert.equal(job.stderr, 'err-line\n');
    assert.equal(job.exitCode, 3);
    // the set-up snapshots the image, so the page restored the booted machine, and the server's
    // hello gave it the time (its clock would otherwise stand at the moment of the snapshot)
    assert.match(serve.stderr(), /dock\.vm_boot .*restore=true/);
    const clock = await runToEnd('date +%s');
    const skew = Math.abs(Number(String(clock.stdout).trim()) - Date.now() / 1000);
    assert.ok(skew < 300, `the guest's clock is ${Math.round(skew)} s off`);
  });

  it('writes a file and reads it back, into a directory that exists (a write makes no directory)', async () => {
    const early = await call('write_file', {
      path: '/workspace/notes/a.txt',
      content: 'x',
      overwrite: false,
    }).catch((e: unknown) => e);
    assert.match(String(early), /NOT_FOUND/, 'the parent directory must exist first');
    await runToEnd('mkdir /workspace/notes');
    await call('write_file', {
      path: '/workspace/notes/a.txt',
      content: 'first line\nsecond é line\n',
      overwrite: false,
    });
    const r = await call('read_file', { path: '/workspace/notes/a.txt' });
    assert.equal(r.content, 'first line\nsecond é line\n');
  });

  it('writes 64 KiB of bytes in a few chunks and reads back exactly those bytes', async () => {
    // every byte value, in a pattern that a lost, doubled or misplaced chunk would change
    const bytes = Buffer.alloc(65_536);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 8)) & 0xff;
    await call('write_file', {
      path: '/workspace/big.bin',
      content: bytes.toString('base64'),
      encoding: 'base64',
      overwrite: true,
    });
    const parts: Buffer[] = [];
    for (let offset = 0; offset < bytes.length; ) {
      const r = await call('read_file', {
        path: '/workspace/big.bin',
        encoding: 'base64',
        offset,
        byteLimit: 65_536,
      });
      parts.push(Buffer.from(String(r.content), 'base64'));
      offset = Number(r.nextOffset);
      if (r.eof) break;
    }
    assert.ok(Buffer.concat(parts).equals(bytes), 'the file holds exactly the bytes written');
    // the agent still answers: no byte of a chunk was read as a request
    assert.equal((await runToEnd('wc -c < /workspace/big.bin')).stdout, '65536\n');
  });

  it('previews a web server running in the guest, through the page, and says when nothing listens', async () => {
    const before = (await call('navigate_preview', { path: '/index.html' })).observed as Record<
      string,
      unknown
    >;
    assert.equal(before.listening, false);
    assert.match(String(before.message), /Nothing is listening on port 8000/);
    await runToEnd('mkdir -p /workspace/site');
    await call('write_file', {
      path: '/workspace/site/index.html',
      content: '<h1>served from the tab</h1>\n',
      overwrite: true,
    });
    // busybox httpd puts itself in the background; the job ends at once
    await runToEnd('httpd -p 127.0.0.1:8000 -h /workspace/site');
    const page = (await call('navigate_preview', { path: '/index.html' })).observed as Record<
      string,
      unknown
    >;
    assert.deepEqual([page.listening, page.httpStatus, page.status], [true, 200, 'ready']);
    const missing = (await call('navigate_preview', { path: '/no-such-page.html' })).observed as Record<
      string,
      unknown
    >;
    assert.equal(missing.httpStatus, 404, 'a real answer of the server, relayed');
    // the relay's processes in the guest go when their connections end
    await pollUntil(
      async () => !String((await runToEnd('ps -o args')).stdout).includes('nc 127.0.0.1'),
      'the preview connections to close in the guest',
      60_000,
      500,
    );
  });

  it('types into a terminal and reads the answer back', async () => {
    const t = await call('create_terminal');
    const terminalId = String(t.terminalId);
    await call('send_terminal_input', { terminalId, text: 'echo "typed $((40+2))"\n' });
    await pollUntil(
      async () => JSON.stringify(await call('read_terminal_output', { terminalId })).includes('typed 42'),
      'the terminal to answer',
      60_000,
      250,
    );
  });

  it('cancels a job together with its child', async () => {
    const job = await call('run_command', { script: '(sleep 311; echo never) & sleep 312', waitMs: 0 });
    const jobId = String(job.jobId);
    await pollUntil(
      async () => String((await runToEnd('ps -o args')).stdout).includes('sleep 311'),
      'the child to run',
      60_000,
      250,
    );
    await call('cancel_job', { jobId });
    const ended = await pollUntil(
      async () => {
        const r = await call('read_job', { jobId });
        return r.terminationObserved ? r : null;
      },
      'the job to end',
      60_000,
      250,
    );
    assert.equal(ended?.canceled, true, JSON.stringify(ended));
    const ps = await runToEnd('ps -o args');
    assert.doesNotMatch(String(ps.stdout), /sleep 31[12]/);
  });

  it('keeps a job that floods output waiting on its pipe: the guest stays small, another command answers, cancel ends it', async () => {
    const flood = await call('run_command', { script: 'yes', waitMs: 0, timeoutMs: 300_000 });
    const jobId = String(flood.jobId);
    // enough output that a job writing into the guest's memory would show in /run
    let cursor: string | undefined;
    let relayed = 0;
    await pollUntil(
      async () => {
        const r = await call('read_job', { jobId, cursor, byteLimit: 65_536 });
        assert.equal(typeof r.nextCursor, 'string', JSON.stringify(r).slice(0, 400));
        cursor = String(r.nextCursor);
        relayed += Buffer.byteLength(String(r.stdout));
        return relayed > 128 * 1024;
      },
      '128 KiB of the flood relayed',
      300_000,
      200,
    );
    const du = await runToEnd('du -sk /run | cut -f1');
    assert.equal(du.exitCode, 0);
    assert.ok(
      Number(du.stdout) < 128,
      `/run holds ${String(du.stdout).trim()} KiB after ${relayed} bytes relayed`,
    );
    await call('cancel_job', { jobId });
    const ended = await pollUntil(
      async () => {
        const r = await call('read_job', { jobId, byteLimit: 16 });
        return r.terminationObserved ? r : null;
      },
      'the flood to end',
      120_000,
      500,
    );
    assert.equal(ended?.canceled, true, JSON.stringify(ended));
  });

  it('serves a WebMCP client in its page: the page lists the tools and runs a command on the browser computer, audited as webmcp', async () => {
    const names = (
      await pollUntil(async () => {
        const tools = await pageTools(page);
        return tools.length > 0 ? tools : null;
      }, 'the page to register its tools')
    )?.map((t) => t.name);
    assert.ok(names?.includes('run_command') && names.includes('read_file'), String(names));
    const viaPage = async (name: string, args: Record<string, unknown>) => {
      const r = await pageCall(page, name, args);
      assert.notEqual(r.isError, true, JSON.stringify(r));
      return r.structuredContent as Record<string, unknown>;
    };
    const started = await viaPage('run_command', {
      script: 'echo from-webmcp-$((6*7)); echo on-stderr >&2; exit 4',
      waitMs: 10_000,
    });
    const job = started.terminationObserved
      ? started
      : await pollUntil(
          async () => {
            const r = await viaPage('read_job', { jobId: started.jobId });
            return r.terminationObserved ? r : null;
          },
          'the WebMCP job to end',
          120_000,
          500,
        );
    assert.deepEqual([job?.stdout, job?.stderr, job?.exitCode], ['from-webmcp-42\n', 'on-stderr\n', 4]);
    assert.equal((await viaPage('get_computer_status', {})).profileId, 'tab');
    const row = rows(project.dataDir).find(
      (x) => x.tool === 'run_command' && x.input.includes('from-webmcp'),
    );
    assert.equal(row?.via, 'webmcp');
  });

  it('ends when its page closes: callers get NOT_RUNNING saying the page went away', async () => {
    await page.close();
    const r = await pollUntil(
      async () => {
        const res = (await client.callTool({
          name: 'run_command',
          arguments: { script: 'true', waitMs: 5000 },
        })) as Result;
        return res.isError ? res : null;
      },
      'the computer to end',
      60_000,
      250,
    );
    const text = JSON.stringify(r?.content);
    assert.match(text, /NOT_RUNNING/);
    assert.match(text, /page that hosted this browser computer went away/);
    assert.equal((await profile()).available, false);
  });

  it('boots from a launch link with no dock page open: the page the confirmation leads to hosts it and runs the script', async () => {
    assert.equal((await profile()).available, false, 'no page can host it now');
    const created = await call('create_launch_link', {
      profileId: 'tab',
      startupScript: 'echo from-link-$((2+3))',
    });
    const linkPage = await page.context().newPage();
    await linkPage.goto(`${serve.url}${new URL(String(created.url)).pathname}`);
    await linkPage.locator('#confirm').click();
    await linkPage.waitForURL(`${serve.url}/`, { timeout: 30_000 });
    await linkPage
      .locator('.job-row pre.stdout')
      .filter({ hasText: 'from-link-5' })
      .waitFor({ timeout: 300_000 });
    await linkPage.close();
  });
});
