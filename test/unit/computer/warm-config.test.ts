/** Configuration of the warm pool: bounds in the schema, profile ids checked at start. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { ComputerBackend } from '../../../src/computer/backend/types.js';
import { ComputerContext } from '../../../src/computer/service-context.js';
import { computerSchema, profileSchema } from '../../../src/config/computer-schema.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { silentLogger } from '../../../src/shared/logger.js';

/** A backend on which every program exists and nothing may launch. */
const inert: ComputerBackend = {
  name: 'inert',
  hasProgram: () => true,
  launch: () => Promise.reject(new Error('no launch in this test')),
  dispose: () => Promise.resolve(),
};

function context(computer: Record<string, unknown>): ComputerContext {
  const dataDir = mkdtempSync(join(tmpdir(), 'paddock-warm-config-'));
  try {
    return new ComputerContext({
      backend: inert,
      config: computerSchema.parse(computer),
      dataDir,
      dockUrl: 'http://127.0.0.1:7331',
      logger: silentLogger(),
    });
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe('warm pool configuration', () => {
  it('bounds warm to 0..16 sandboxes per profile, in a profile and in computer.warm', () => {
    const profile = { id: 'p', name: 'P' };
    assert.equal(profileSchema.parse(profile).warm, 0);
    assert.equal(profileSchema.parse({ ...profile, warm: 16 }).warm, 16);
    assert.equal(profileSchema.safeParse({ ...profile, warm: 17 }).success, false);
    assert.equal(profileSchema.safeParse({ ...profile, warm: -1 }).success, false);
    assert.equal(profileSchema.safeParse({ ...profile, warm: 1.5 }).success, false);
    assert.equal(computerSchema.safeParse({ warm: { shell: 17 } }).success, false);
    assert.deepEqual(computerSchema.parse({ warm: { shell: 2 } }).warm, { shell: 2 });
  });

  it('refuses to start when computer.warm names a profile that does not exist, naming the known ones', () => {
    assert.throws(
      () => context({ warm: { shel: 1 } }),
      (e: unknown) =>
        isPaddockError(e) &&
        e.code === 'INVALID_ARGUMENT' &&
        /computer\.warm\.shel/.test(e.message) &&
        /shell, node, python/.test(e.message),
    );
  });

  it('keeps no pool for profiles without warm sandboxes', async () => {
    const ctx = context({});
    assert.equal(ctx.pool.size, 0);
    assert.equal(ctx.pool.keeps('shell'), false);
    await ctx.drainPool();
  });
});
