/**
 * `paddock status`, `paddock stop` and `paddock open`: one-shot requests to the running server
 * over its unix socket. Light on purpose: they load no services.
 */
import { spawn } from 'node:child_process';
import { locateConfig } from '../config/locate.js';
import { describeIdentity, type InstancePaths, instancePaths, processAlive } from '../mcp/instance.js';
import { knock, requestServer } from '../mcp/socket-client.js';
import type { SessionSummary } from '../mcp/socket-protocol.js';
import { sleep } from '../shared/abort.js';
import { out, parseCommandArgs } from './args.js';

const OPTIONS = { config: { type: 'string' as const }, help: { type: 'boolean' as const, short: 'h' } };

function pathsFor(values: Record<string, unknown>): InstancePaths {
  const location = locateConfig(typeof values.config === 'string' ? { configPath: values.config } : {});
  return instancePaths(location.dataDir);
}

async function notRunning(paths: InstancePaths): Promise<string> {
  const result = await knock(paths, { op: 'status' }).catch(() => ({
    kind: 'absent' as const,
    stale: false,
  }));
  if (result.kind === 'answered') result.socket.destroy();
  const stale = result.kind === 'absent' && result.stale;
  return `No Paddock server runs for ${paths.dataDir}${stale ? ' (a crashed server left its socket; the next start replaces it)' : ''}. Start one with \`paddock serve\`, or let \`paddock mcp\` start it.`;
}

/** `paddock status [--json]`: whether a server runs, where, its sessions and computers. Exit 1 when none. */
export async function statusCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs('status', args, { ...OPTIONS, json: { type: 'boolean' } }, false);
  if (values.help) {
    out(
      'Usage: paddock status [--json]\n\nShows the server of the data directory: pid, URLs, configuration, MCP sessions, computers.\nExit code 1 when no server runs.',
    );
    return 0;
  }
  const paths = pathsFor(values);
  const answer = await requestServer(paths, 'status');
  if (!answer?.reply.ok) {
    if (values.json) out(JSON.stringify({ running: false, dataDir: paths.dataDir }));
    else out(await notRunning(paths));
    return 1;
  }
  const { info, reply } = answer;
  if (values.json) {
    out(JSON.stringify({ running: true, ...reply, paddock: undefined, ok: undefined, socket: paths.socket }));
    return 0;
  }
  const sessions = (reply.sessions ?? []) as SessionSummary[];
  const computers = (reply.computers ?? []) as Record<string, unknown>[];
  out(`Paddock ${info.version} is running (pid ${info.pid}, since ${info.startedAt}).`);
  out(`  Data:      ${paths.dataDir}`);
  out(`  Config:    ${describeIdentity(info.config)}`);
  out(`  Dock:      ${info.url}/   (\`paddock open\` prints a login link)`);
  out(`  MCP:       ${info.url}/mcp, and ${paths.socket} (\`paddock mcp\`)`);
  out(`  Sessions:  ${sessions.length === 0 ? 'none' : sessions.length}`);
  for (const s of sessions)
    out(
      `    mcp:${s.id}  ${s.transport.padEnd(6)}  ${s.principalName ?? 'owner'}  computer ${s.computer}  ${s.client ?? ''}  since ${s.openedAt}`,
    );
  out(`  Computers: ${computers.length === 0 ? 'none' : computers.length}`);
  for (const c of computers)
    out(
      `    ${c.name ?? ''}  ${c.generation === null ? '(none launched)' : `g${c.generation}`}  ${c.profileId ?? ''}  ${c.lifecycle}`,
    );
  return 0;
}

/** `paddock stop`: asks the server to shut down and waits until its process is gone. */
export async function stopCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs('stop', args, OPTIONS, false);
  if (values.help) {
    out(
      'Usage: paddock stop\n\nStops the server of the data directory (its sessions end, its computers stop).',
    );
    return 0;
  }
  const paths = pathsFor(values);
  const answer = await requestServer(paths, 'stop');
  if (!answer?.reply.ok) {
    out(await notRunning(paths));
    return 0;
  }
  const { pid } = answer.info;
  const deadline = Date.now() + 30_000;
  while (processAlive(pid)) {
    if (Date.now() > deadline) {
      process.stderr.write(
        `paddock stop: the server (pid ${pid}) is still stopping after 30 s; check it with \`paddock status\`.\n`,
      );
      return 1;
    }
    await sleep(50);
  }
  out(`Stopped the Paddock server (pid ${pid}) of ${paths.dataDir}.`);
  return 0;
}

/** `paddock open`: a fresh single-use login link from the running server, opened in a browser when one is available. */
export async function openCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs('open', args, { ...OPTIONS, print: { type: 'boolean' } }, false);
  if (values.help) {
    out(
      'Usage: paddock open [--print]\n\nAsks the running server for a new single-use login link to the dock (valid 10 minutes),\nprints it and opens it in your browser ($BROWSER, else xdg-open on a desktop). --print only prints.',
    );
    return 0;
  }
  const paths = pathsFor(values);
  const answer = await requestServer(paths, 'open');
  if (!answer?.reply.ok || typeof answer.reply.url !== 'string') {
    process.stderr.write(`paddock open: ${await notRunning(paths)}\n`);
    return 1;
  }
  const url = answer.reply.url;
  out(url);
  if (!values.print) {
    const opener = openInBrowser(url);
    process.stderr.write(
      opener
        ? `Opening it with ${opener}; the link works once and for ten minutes.\n`
        : 'No browser found here ($BROWSER or a desktop session); open the link yourself. It works once and for ten minutes.\n',
    );
  }
  return 0;
}

/** Starts a browser on `url` without waiting; the command used, or null when there is none. */
function openInBrowser(url: string, env = process.env): string | null {
  const configured = env.BROWSER?.split(':').find((b) => b.trim() !== '');
  const desktop = env.DISPLAY || env.WAYLAND_DISPLAY;
  const command = configured ?? (process.platform === 'darwin' ? 'open' : desktop ? 'xdg-open' : null);
  if (!command) return null;
  const [file, ...rest] = command.trim().split(/\s+/);
  if (!file) return null;
  const argv = rest.some((a) => a.includes('%s')) ? rest.map((a) => a.replace('%s', url)) : [...rest, url];
  try {
    const child = spawn(file, argv, { detached: true, stdio: 'ignore' });
    child.on('error', () => {});
    child.unref();
    return file;
  } catch {
    return null;
  }
}
