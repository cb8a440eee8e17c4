/**
 * ComputerPrincipals against a reference model: generated sequences of callers (the owner,
 * OAuth clients with generated grants, agents) acting on generated computers, each checked
 * against a plain statement of the rule; then the quotas of computers and jobs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ComputerPrincipals } from '../../../src/computer/principals.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { OWNER, type Principal, principalKey } from '../../../src/shared/principal.js';
import type { CallerContext } from '../../../src/tools/tool.js';
import { random } from '../../helpers/fuzz.js';

const NAMES = ['review-box', 'prod', 'scratch', 'a'];

function callerOf(principal: Principal): CallerContext {
  return { caller: `mcp:${principalKey(principal)}`, principal, via: 'direct', attended: true };
}

function pick<T>(rnd: () => number, items: readonly T[]): T {
  return items[Math.floor(rnd() * items.length)]!;
}

const QUOTAS = {
  clients: { maxComputers: 2, maxJobs: 2 },
  agents: { maxComputers: 3, maxJobs: 1 },
  ownerReserve: 2,
};

describe('which principal may act on which computer', () => {
  it('matches the reference rule over 200 generated sequences of 40 calls each', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const rnd = random(seed);
      const principals: Principal[] = [
        OWNER,
        { kind: 'agent', name: 'digest' },
        ...['cl_a', 'cl_b', 'cl_c'].map(
          (id): Principal => ({
            kind: 'client',
            id,
            name: id,
            computers: NAMES.filter(() => rnd() < 0.3),
          }),
        ),
      ];
      const privateKeys = ['private:mcp:s1', 'private:mcp:s2', 'private:agent:r1', 'private:mcp:s3'];
      const model = new Map<string, string>();
      const subject = new ComputerPrincipals(QUOTAS);
      for (let step = 0; step < 40; step++) {
        const p = pick(rnd, principals);
        const key = rnd() < 0.5 ? `named:${pick(rnd, NAMES)}` : pick(rnd, privateKeys);
        let expected: boolean;
        if (key.startsWith('named:')) {
          expected = p.kind !== 'client' || p.computers.includes(key.slice(6));
        } else {
          const holder = model.get(key);
          expected = holder === undefined || p.kind === 'owner' || holder === principalKey(p);
          if (holder === undefined && p.kind !== 'owner') model.set(key, principalKey(p));
        }
        let allowed = true;
        try {
          subject.admit(callerOf(p), key);
        } catch (e) {
          assert.ok(isPaddockError(e) && e.code === 'NOT_FOUND', String(e));
          assert.doesNotMatch(
            e.message,
            /private:|named:|mcp:|agent:|cl_/,
            'a refusal names nothing that exists',
          );
          allowed = false;
        }
        assert.equal(allowed, expected, `seed ${seed} step ${step}: ${principalKey(p)} on ${key}`);
      }
    }
  });
});

describe('quotas of computers and jobs', () => {
  const client = (id: string): Principal => ({ kind: 'client', id, name: id, computers: [] });

  it('holds each client to its own computers and all clients to what the owner’s reserve leaves', () => {
    const p = new ComputerPrincipals(QUOTAS);
    const keys = ['private:a1', 'private:a2', 'private:a3', 'private:b1', 'private:c1'];
    for (const [key, who] of [
      ['private:a1', 'cl_a'],
      ['private:a2', 'cl_a'],
      ['private:a3', 'cl_a'],
      ['private:b1', 'cl_b'],
      ['private:c1', 'cl_c'],
    ] as const)
      p.admit(callerOf(client(who)), key);
    assert.equal(p.capacityProblem('private:a1', [], 5), null);
    const own = p.capacityProblem('private:a3', ['private:a1', 'private:a2'], 10);
    assert.equal(own?.details.limit, 'principals.clients.maxComputers');
    // 5 computers, 2 kept for the owner: clients share 3
    const shared = p.capacityProblem('private:c1', ['private:a1', 'private:b1', 'named:box'], 5);
    assert.equal(shared, null, 'the named (owner’s) computer does not count against clients');
    const full = p.capacityProblem('private:c1', ['private:a1', 'private:a2', 'private:b1'], 5);
    assert.equal(full?.details.limit, 'principals.ownerReserve.computers');
    assert.equal(p.capacityProblem('named:box', keys, 5), null, 'the owner is held only to the server’s cap');
  });

  it('counts a principal’s running jobs until each exits, and gives back a slot that never started', () => {
    const p = new ComputerPrincipals(QUOTAS);
    const a = callerOf(client('cl_a'));
    const first = p.reserveJob(a, 'private:a');
    first.started('g1.job1');
    const second = p.reserveJob(a, 'private:a');
    assert.throws(
      () => p.reserveJob(a, 'private:a'),
      (e: unknown) =>
        isPaddockError(e) &&
        e.code === 'LIMIT_EXCEEDED' &&
        /principals\.clients\.maxJobs \(2\)/.test(e.message),
    );
    second.release();
    const third = p.reserveJob(a, 'private:a');
    third.started('g1.job3');
    assert.deepEqual(
      p.jobsOf('client:cl_a').map((j) => j.jobId),
      ['g1.job1', 'g1.job3'],
    );
    p.jobExited('g1.job1');
    p.jobExited('g1.job1');
    assert.equal(p.runningJobs('client:cl_a'), 1, 'an exit counts once');
    for (let i = 0; i < 50; i++) p.reserveJob(callerOf(OWNER), 'named:box').started(`g2.job${i}`);
    assert.equal(p.runningJobs('owner'), 50, 'the owner is not held to a job quota');
  });
});
