import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { diskImageSupport } from '../computer/backend/bwrap/disk-image.js';
import { ConfigError, type LoadedConfig, loadConfig } from '../config/load.js';
import { probePostgres } from '../store/postgres/probe.js';
import { openDatabase } from '../store/sqlite/database.js';
import { resolveStoreTarget } from '../store/target.js';
import { out, parseCommandArgs } from './args.js';

interface Check {
  name: string;
  ok: boolean;
  /** A failure that only the tests or the bench feel: reported, but the exit code stays 0. */
  optional?: boolean;
  detail: string;
  /** How to fix it, when not ok. */
  fix?: string;
}

/** One entry of scripts/system-deps.mjs, the list that `npm start` / `npm test` install from too. */
interface SystemDep {
  path: string;
  pkg: string;
  purpose: string;
  scope: 'serve' | 'test' | 'bench';
}
interface SystemDeps {
  neededFor(scope: string): SystemDep[];
  isPresent(dep: SystemDep): boolean;
  installCommand(pkgs: string[]): string;
}

/**
 * The Debian packages serving needs (a failure when missing); with `dev`, also those only the
 * tests and the bench need (reported, never a failure).
 */
async function systemChecks(dev: boolean): Promise<Check[]> {
  const deps = (await import(
    new URL('../../../scripts/system-deps.mjs', import.meta.url).href
  )) as SystemDeps;
  return deps.neededFor(dev ? 'bench' : 'serve').map((d) => {
    const ok = deps.isPresent(d);
    return {
      name: d.pkg,
      ok,
      optional: d.scope !== 'serve',
      detail: ok
        ? `${d.path} (${d.purpose})`
        : `${d.path} is missing; needed for ${d.purpose}${d.scope === 'serve' ? '' : ` (npm ${d.scope === 'test' ? 'test' : 'run bench'})`}`,
      fix: deps.installCommand([d.pkg]),
    };
  });
}

/** A configured PostgreSQL store: can it be reached, and how does its schema stand. */
const HELP = `Usage: paddock doctor [--json] [--dev] [--config FILE]

Checks Node, bubblewrap and user namespaces, SQLite (or a configured PostgreSQL store), the
configuration and the data directory, and says how to fix each failure. Exit code 0 when everything passes.
--dev also lists the packages that only Paddock's own tests and bench use (never a failure).`;

export async function doctorCommand(args: string[]): Promise<number> {
  const { values } = parseCommandArgs(
    'doctor',
    args,
    {
      config: { type: 'string' },
      json: { type: 'boolean' },
      dev: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    false,
  );
  if (values.help) {
    out(HELP);
    return 0;
  }
  const checks: Check[] = [];
  const major = Number(process.versions.node.split('.')[0]);
  checks.push({
    name: 'node',
    ok: major >= 20,
    detail: `Node ${process.versions.node}`,
    fix: 'Install Node.js 20 or newer.',
  });
  checks.push(...(await systemChecks(values.dev === true)));
  const bwrap = spawnSync('bwrap', ['--version'], { encoding: 'utf8' });
  if (bwrap.status === 0) {
    const probe = spawnSync('bwrap', ['--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', 'true'], {
      encoding: 'utf8',
    });
    checks.push({
      name: 'user namespaces',
      ok: probe.status === 0,
      detail:
        probe.status === 0 ? 'bwrap can create namespaces' : probe.stderr.trim() || `exit ${probe.status}`,
      fix: 'Enable unprivileged user namespaces: `sudo sysctl -w kernel.unprivileged_userns_clone=1` (and on Ubuntu 24.04+, `kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor profile for bwrap).',
    });
  }
  checks.push(diskQuotaCheck());
  let loaded: LoadedConfig | undefined;
  try {
    loaded = loadConfig({ ...(typeof values.config === 'string' ? { configPath: values.config } : {}) });
    checks.push({ name: 'config', ok: true, detail: loaded.file ?? 'no paddock.yaml: built-in defaults' });
  } catch (e) {
    checks.push({
      name: 'config',
      ok: false,
      detail: e instanceof ConfigError ? e.message : (e as Error).message,
      fix: 'Fix the lines above, or run `paddock init` for a commented starter file.',
    });
  }
  if (loaded) {
    const dataDir = loaded.dataDir;
    try {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      accessSync(dataDir, constants.W_OK);
      checks.push({ name: 'data directory', ok: true, detail: dataDir });
      checks.push(await storeCheck(loaded));
      const images = await imagesCheck(loaded);
      if (images) checks.push(images);
    } catch (e) {
      checks.push({
        name: 'data directory',
        ok: false,
        detail: `${dataDir}: ${(e as Error).message}`,
        fix: 'Set PADDOCK_DATA to a writable directory.',
      });
    }
  }
  if (values.json) out(JSON.stringify(checks, null, 2));
  else {
    for (const c of checks) {
      out(`${c.ok ? 'ok  ' : c.optional ? 'warn' : 'FAIL'}  ${c.name.padEnd(16)} ${c.detail}`);
      if (!c.ok && c.fix) out(`      ${''.padEnd(16)} fix: ${c.fix}`);
    }
  }
  return checks.every((c) => c.ok || c.optional) ? 0 : 1;
}

/** Whether a profile's `diskMb` bounds everything a computer's jobs can write. */
function diskQuotaCheck(): Check {
  const support = diskImageSupport();
  if (support.ok)
    return {
      name: 'disk quota',
      ok: true,
      detail: "each computer gets a disk image of its profile's diskMb holding /workspace and /tmp",
    };
  return {
    name: 'disk quota',
    ok: false,
    optional: true,
    detail: `not enforced on /workspace: ${support.reason}. A job can fill the host's disk through /workspace; /tmp and single files stay bounded by diskMb.`,
    fix: 'Run Paddock as root on a host with loop devices (/dev/loop-control), ext4 and e2fsprogs (`apt-get install e2fsprogs`).',
  };
}

/** Whether the profiles that name an image can boot here, and which images are still to build (none: no profile has one). */
async function imagesCheck(loaded: LoadedConfig): Promise<Check | null> {
  const withImage = loaded.config.computer.profiles.filter((p) => p.image);
  if (withImage.length === 0) return null;
  const { BwrapBackend } = await import('../computer/backend/bwrap/backend.js');
  const { silentLogger } = await import('../shared/logger.js');
  const why = new BwrapBackend({ logger: silentLogger(), useCgroups: false }).imageSupport();
  if (why)
    return {
      name: 'images',
      ok: false,
      optional: true,
      detail: `profiles with an image cannot boot here: ${why}`,
      fix: 'Run Paddock as root on an x86-64 host with loop devices, ext4, overlayfs and Landlock (docs/images.md).',
    };
  const { openProfileImages } = await import('../computer/images/index.js');
  const images = openProfileImages(loaded.config.computer, loaded.dataDir, loaded.projectDir, () => null);
  const unbuilt = withImage.filter((p) => images.unavailable(p) !== null).map((p) => p.id);
  return unbuilt.length === 0
    ? { name: 'images', ok: true, detail: `${withImage.length} profile(s) on images, every image built` }
    : {
        name: 'images',
        ok: false,
        optional: true,
        detail: `not built yet for: ${unbuilt.join(', ')}`,
        fix: unbuilt.map((id) => `paddock images build ${id}`).join('; '),
      };
}

/** The configured store opens: the embedded SQLite file (and its journal mode), or the database store.url names. */
/** The configured store: the embedded SQLite file, or a PostgreSQL database probed without migrating it. */
async function storeCheck(loaded: LoadedConfig): Promise<Check> {
  let target: ReturnType<typeof resolveStoreTarget>;
  try {
    target = resolveStoreTarget(loaded.config.store, loaded.dataDir);
  } catch (e) {
    return { name: 'store', ok: false, detail: (e as Error).message, fix: 'Correct store in paddock.yaml.' };
  }
  if (target.kind === 'postgres') {
    try {
      return { name: 'postgres', ok: true, detail: await probePostgres(target.url, target.password) };
    } catch (e) {
      return {
        name: 'postgres',
        ok: false,
        detail: (e as Error).message,
        fix: 'The message above names what to change; `paddock serve` stops on the same problem.',
      };
    }
  }
  try {
    const db = openDatabase(target.file);
    const mode = db.pragma('journal_mode', { simple: true });
    db.close();
    return { name: 'sqlite', ok: true, detail: `${target.file} opens (journal ${String(mode)})` };
  } catch (e) {
    return {
      name: 'sqlite',
      ok: false,
      detail: (e as Error).message,
      fix: 'Reinstall dependencies (`npm ci`) so better-sqlite3 is built for this Node, and check the disk.',
    };
  }
}
