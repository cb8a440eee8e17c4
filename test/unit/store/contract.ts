/**
 * The shared store suite: every guarantee of the store interfaces, run against each
 * implementation (sqlite.test.ts, postgres.test.ts) through one factory.
 */
import { auditContract } from './contract-audit.js';
import { checkpointsContract } from './contract-checkpoints.js';
import { pinsContract } from './contract-pins.js';
import { recordsContract } from './contract-records.js';
import { runsContract } from './contract-runs.js';
import type { StoreFactory } from './fixtures.js';

export type { StoreFactory, StoreHandle } from './fixtures.js';

/** Runs the whole suite against the stores `factory` opens. */
export function storeContract(factory: StoreFactory): void {
  auditContract(factory);
  runsContract(factory);
  recordsContract(factory);
  pinsContract(factory);
  checkpointsContract(factory);
}
