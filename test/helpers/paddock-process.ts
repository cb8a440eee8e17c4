import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pollUntil } from './poll.js';

/** The repository root (tests run from dist/test/...). */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const PADDOCK_BIN = join(REPO_ROOT, 'bin', 'paddock');

/** A temporary project directory and data directory, removed by `cleanup`. */
export interface TempProject {
  dir: string;
  dataDir: string;
  env: NodeJS.ProcessEnv;
  cleanup(): void;
}

export function tempProject(configYaml?: string): TempProject {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-test-'));
  const dataDir = join(dir, 'data');
  if (configYaml !== undefined) writeFileSync(join(dir, 'paddock.yaml'), configYaml);
  const env: NodeJS.ProcessEnv = { ...process.env, PADDOCK_DATA: dataDir };
  delete env.PADDOCK_CONFIG;
  const cleanup = () => {
    // a server that `paddock mcp` started in the background outlives its bridges: stop it
    if (existsSync(join(dataDir, 'run', 'server.json')))
      spawnSync(process.execPath, [PADDOCK_BIN, 'stop'], { cwd: dir, env, stdio: 'ignore', timeout: 60_000 });
    rmSync(dir, { recursive: true, force: true });
  };
  return { dir, dataDir, env, cleanup };
}

/** A running `paddock serve` child. */
export interface ServeProcess {
  child: ChildProcess;
  url: string;
  token: string;
  stdout(): string;
  stderr(): string;
  /** The dock's login link that the server printed at start (auth `token` only). */
  loginLink(timeoutMs?: number): Promise<string>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `paddock serve --port 0` in the project and waits until it prints its URL. */
export async function startServe(
  project: TempProject,
  extraArgs: string[] = [],
  timeoutMs = 30_000,
): Promise<ServeProcess> {
  const child = spawn(process.execPath, [PADDOCK_BIN, 'serve', '--port', '0', ...extraArgs], {
    cwd: project.dir,
    env: project.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`paddock serve did not start in time.\nstdout:\n${out}\nstderr:\n${err}`));
    }, timeoutMs);
    const onData = () => {
      const m = /MCP endpoint: (http:\/\/\S+)\/mcp/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolve(m[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`paddock serve exited with ${code}.\nstdout:\n${out}\nstderr:\n${err}`));
    });
  });
  let token = '';
  try {
    token = readFileSync(join(project.dataDir, 'token'), 'utf8').trim();
  } catch {
    // auth none: no token file
  }
  return {
    child,
    url,
    token,
    stdout: () => out,
    stderr: () => err,
    loginLink: (waitMs = 10_000) =>
      pollUntil(
        () => /Login link:\s+(http:\/\/\S+)/.exec(out)?.[1] ?? '',
        'the login link on stdout',
        waitMs,
      ),
    stop: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill(signal);
      }),
  };
}

/** Runs the CLI to completion. */
export function runCli(
  project: TempProject,
  args: string[],
  input?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PADDOCK_BIN, ...args], {
      cwd: project.dir,
      env: project.env,
      stdio: 'pipe',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}
