/**
 * Two accounts inside a computer: the guest agent and the jobs.
 *
 * An unprivileged user namespace maps one id only, so every process of the computer would be one
 * account and a job could signal, trace or rewrite the guest agent. When Paddock runs as root it
 * writes the namespace's id maps itself (bwrap waits on `--userns-block-fd` until they are
 * written): uid 0 inside is the agent, with a handful of capabilities of that namespace only and
 * mapped to the sandbox's host uid; the guest account (uid 1000) that runs every job and
 * terminal is mapped to a second host uid and holds no capability. Host root is never mapped.
 */
import { writeFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { GUEST_UID } from '../../link/guest-layout.js';

/** Host ids the computer's two accounts map to. */
export interface IdMap {
  /** Host uid (and gid) of the guest agent: uid 0 inside. */
  agentHostId: number;
  /** Host uid (and gid) of jobs and terminals: the guest account inside. */
  jobHostId: number;
}

/**
 * Capabilities the agent keeps inside its namespace: start jobs as the guest account, signal
 * them, and do file operations on the guest account's files, handing new ones to it; serve the
 * computer's resolver and the handed-out names on ports below 1024 of its own lo; and read which
 * process holds a socket (its descriptors, its environment) to tell the host which job connected.
 */
export const AGENT_CAPABILITIES = [
  'CAP_SETUID',
  'CAP_SETGID',
  'CAP_KILL',
  'CAP_DAC_OVERRIDE',
  'CAP_FOWNER',
  'CAP_CHOWN',
  'CAP_NET_BIND_SERVICE',
  'CAP_SYS_PTRACE',
];

/** The uid_map / gid_map text of a computer. */
export function idMapText(map: IdMap): string {
  return `0 ${map.agentHostId} 1\n${GUEST_UID} ${map.jobHostId} 1\n`;
}

/**
 * Waits for bwrap's info (the sandbox's pid), writes the maps (`lines`: idMapText, or the image
 * map of images/ids.ts), then lets bwrap go on. Rejects
 * when bwrap exits first or the maps cannot be written; the caller kills the sandbox then.
 */
export function writeIdMaps(info: Readable, block: Writable, lines: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    const done = (e?: Error) => {
      info.removeAllListeners('data');
      info.removeAllListeners('end');
      info.destroy();
      if (e) reject(e);
      else resolve();
    };
    block.on('error', () => undefined);
    info.on('error', (e) => done(e));
    info.on('end', () => done(new Error('bubblewrap ended before it reported the sandbox pid')));
    info.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      let pid: unknown;
      try {
        pid = (JSON.parse(text) as { 'child-pid'?: unknown })['child-pid'];
      } catch {
        return; // not complete yet
      }
      if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) {
        done(new Error(`bubblewrap reported no sandbox pid: ${text.slice(0, 200)}`));
        return;
      }
      try {
        writeFileSync(`/proc/${pid}/uid_map`, lines);
        writeFileSync(`/proc/${pid}/gid_map`, lines);
      } catch (e) {
        done(new Error(`could not map the computer's accounts: ${(e as Error).message}`));
        return;
      }
      block.end('1');
      done();
    });
  });
}
