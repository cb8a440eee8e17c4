/**
 * Which principal may act on which computer, and what each holds: the computers' holders, the
 * jobs each principal has running, and the quotas over both. The owner reaches every computer;
 * an OAuth client reaches its own private computers and the named ones its grant lists, and
 * nothing else exists for it (NOT_FOUND, never a list); an agent reaches what its definition
 * names. A named computer is held by the owner (a client granted one uses the owner's).
 */
import { PaddockError } from '../shared/errors.js';
import { OWNER, type Principal, principalKey } from '../shared/principal.js';
import type { CallerContext } from '../tools/tool.js';

/** What each principal other than the owner may hold at once (paddock.yaml `principals`). */
export interface ComputerQuotas {
  clients: { maxComputers: number; maxJobs: number };
  agents: { maxComputers: number; maxJobs: number };
  /** Of `computer.maxComputers`, computers no client may take (they stay for the owner). */
  ownerReserve: number;
}

/** A job slot taken for a principal before its job starts. */
export interface JobTicket {
  /** The job got its id (it counts until it exits). */
  started(jobId: string): void;
  /** The job never started: the slot goes back. */
  release(): void;
}

interface HeldJob {
  principal: string;
  computer: string;
}

/** The principals' side of a ComputerService (one per service). */
export class ComputerPrincipals {
  /** Private computer key → the principal it belongs to (named ones are the owner's). */
  private readonly holders = new Map<string, Principal>();
  /** Running job id → whose and where. */
  private readonly jobs = new Map<string, HeldJob>();
  /** Principal key → job slots taken (running jobs plus jobs starting). */
  private readonly jobSlots = new Map<string, number>();

  constructor(private readonly quotas: ComputerQuotas | undefined) {}

  /** The principal that holds computer `key`. */
  holderOf(key: string): Principal {
    return this.holders.get(key) ?? OWNER;
  }

  /**
   * Lets `caller` act on computer `key`, or throws NOT_FOUND in the same words whether or not
   * such a computer exists. A private computer's first user becomes its holder.
   */
  admit(caller: CallerContext, key: string): void {
    const p = caller.principal;
    if (key.startsWith('private:')) {
      const holder = this.holders.get(key);
      if (!holder) {
        if (p.kind !== 'owner') this.holders.set(key, p);
        return;
      }
      if (p.kind === 'owner' || principalKey(holder) === principalKey(p)) return;
      throw notFound(null);
    }
    if (p.kind !== 'client') return;
    const name = key.slice('named:'.length);
    if (!p.computers.includes(name)) throw notFound(name);
  }

  /** The computer `key` is gone: it has no holder any more. */
  forget(key: string): void {
    this.holders.delete(key);
  }

  /** Keys of the private computers `principal` holds. */
  computersOf(principal: string): string[] {
    return [...this.holders].filter(([, p]) => principalKey(p) === principal).map(([key]) => key);
  }

  /**
   * LIMIT_EXCEEDED when the holder of `key` may not run one more computer beside `running`
   * (the keys of the other computers booting or running): its own quota, and for a client the
   * computers outside the owner's reserve. Null when it may.
   */
  capacityProblem(key: string, running: readonly string[], max: number): PaddockError | null {
    const holder = this.holderOf(key);
    const quotas = this.quotas;
    if (holder.kind === 'owner' || !quotas) return null;
    const mine = running.filter((k) => principalKey(this.holderOf(k)) === principalKey(holder)).length;
    const quota = holder.kind === 'client' ? quotas.clients : quotas.agents;
    const setting =
      holder.kind === 'client' ? 'principals.clients.maxComputers' : 'principals.agents.maxComputers';
    if (mine >= quota.maxComputers) {
      return new PaddockError(
        'LIMIT_EXCEEDED',
        `You already run ${mine} computer${mine === 1 ? '' : 's'}, your limit ${setting} (${quota.maxComputers}). End a session whose computer you no longer need (its computer stops after computer.sessionGraceMs), or ask the owner to raise ${setting}.`,
        { limit: setting, max: quota.maxComputers, running: mine },
      );
    }
    if (holder.kind !== 'client') return null;
    const shared = Math.max(0, max - quotas.ownerReserve);
    const clients = running.filter((k) => this.holderOf(k).kind === 'client').length;
    if (clients >= shared) {
      return new PaddockError(
        'LIMIT_EXCEEDED',
        `The computers open to clients are all in use (${shared} of computer.maxComputers; principals.ownerReserve.computers keeps the rest for the owner). Retry later, or ask the owner to raise computer.maxComputers.`,
        { limit: 'principals.ownerReserve.computers', max: shared, running: clients },
      );
    }
    return null;
  }

  /** Takes a job slot for `caller` on computer `key` (LIMIT_EXCEEDED over its quota). */
  reserveJob(caller: CallerContext | undefined, key: string): JobTicket {
    const principal = caller?.principal ?? OWNER;
    const who = principalKey(principal);
    const quota =
      principal.kind === 'client'
        ? this.quotas?.clients.maxJobs
        : principal.kind === 'agent'
          ? this.quotas?.agents.maxJobs
          : undefined;
    const taken = this.jobSlots.get(who) ?? 0;
    if (quota !== undefined && taken >= quota) {
      const setting =
        principal.kind === 'client' ? 'principals.clients.maxJobs' : 'principals.agents.maxJobs';
      throw new PaddockError(
        'LIMIT_EXCEEDED',
        `You already have ${taken} jobs running, your limit ${setting} (${quota}). Wait for one to end (read_job) or cancel one (cancel_job), then retry.`,
        { limit: setting, max: quota, running: taken },
      );
    }
    this.jobSlots.set(who, taken + 1);
    let id: string | null = null;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const left = (this.jobSlots.get(who) ?? 1) - 1;
      if (left > 0) this.jobSlots.set(who, left);
      else this.jobSlots.delete(who);
      if (id !== null) this.jobs.delete(id);
    };
    return {
      started: (jobId) => {
        if (released) return;
        id = jobId;
        this.jobs.set(jobId, { principal: who, computer: key });
        this.exits.set(jobId, release);
      },
      release,
    };
  }

  /** Releases of running jobs, by job id (called when the job's root exits). */
  private readonly exits = new Map<string, () => void>();

  /** Job `jobId` exited (its root, or its whole generation ended): its slot goes back. */
  jobExited(jobId: string): void {
    const release = this.exits.get(jobId);
    if (!release) return;
    this.exits.delete(jobId);
    release();
  }

  /** Jobs of `principal` still running, with their computers. */
  jobsOf(principal: string): { jobId: string; computer: string }[] {
    return [...this.jobs]
      .filter(([, j]) => j.principal === principal)
      .map(([jobId, j]) => ({ jobId, computer: j.computer }));
  }

  /** Jobs running per principal (status and tests). */
  runningJobs(principal: string): number {
    return this.jobSlots.get(principal) ?? 0;
  }
}

/** The one refusal for a computer a principal may not reach: the same words whether it exists or not. */
function notFound(name: string | null): PaddockError {
  if (name === null)
    return new PaddockError(
      'NOT_FOUND',
      'This computer is not available to you. Use your own computer (open a session without a Paddock-Computer header).',
    );
  return new PaddockError(
    'NOT_FOUND',
    `No computer "${name}" is available to you. Use your own computer (open the session without a Paddock-Computer header), or ask the owner to grant computer:${name} on the dock's Clients page.`,
  );
}
