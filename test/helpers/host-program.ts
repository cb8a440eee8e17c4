import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs `fn` with one of the programs the host assembles for a computer (paddock-scope,
 * paddock-spawner) written to a temporary executable file that any account may run; skips the
 * test where this architecture has none.
 */
export async function withHostProgram(
  t: { skip(reason: string): void },
  name: string,
  program: Buffer | null,
  fn: (path: string) => void | Promise<void>,
): Promise<void> {
  if (!program) {
    t.skip(`no ${name} for ${process.arch}`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  try {
    const path = join(dir, name);
    writeFileSync(path, program);
    chmodSync(dir, 0o755);
    chmodSync(path, 0o755);
    await fn(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
