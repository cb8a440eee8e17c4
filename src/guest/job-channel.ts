/**
 * A job's tool channel on the agent's side: its directory (the agent's own, in a parent only the
 * agent can change, handed to the job's account) and the scanner that takes request frames off
 * the job's stderr and forwards them to the host.
 */
import { chownSync, lstatSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { type JobAccount, SHELL_POOL_SUFFIX, TOOL_CHANNEL_ROOT } from './account.js';
import { ChannelScanner } from './channel-scanner.js';
import { GuestFailure } from './failure.js';
import type { GuestLink } from './link.js';
import type { CallArgs } from './protocol.js';

/** Creates a job's channel directory and the shell client's FIFO pool beside it. */
function channelDirFor(dir: string, account: JobAccount | null): void {
  const root = lstatSync(TOOL_CHANNEL_ROOT);
  if (dirname(dir) !== TOOL_CHANNEL_ROOT || !root.isDirectory() || root.uid !== process.getuid?.()) {
    throw new GuestFailure(
      'INTERNAL',
      `${dir} is not in the agent's own ${TOOL_CHANNEL_ROOT}; relaunch the computer.`,
    );
  }
  // the shell client's pool of reply FIFOs lives beside it (see shellFifo)
  for (const path of [dir, `${dir}${SHELL_POOL_SUFFIX}`]) {
    mkdirSync(path, { mode: 0o700 });
    if (account) chownSync(path, account.uid, account.gid);
  }
}

/** The channel directory and stderr scanner of a job (null without a channel). */
export function jobChannel(
  link: GuestLink,
  account: JobAccount | null,
  args: CallArgs<'exec'>,
): ChannelScanner | null {
  if (!args.toolChannel) return null;
  channelDirFor(args.toolChannel.dir, account);
  const stream = args.stream;
  const nonce = args.toolChannel.nonce;
  return new ChannelScanner(nonce, (frame) =>
    link.send({
      t: 'channel.request',
      stream,
      nonce,
      frame: frame.kind === 'malformed' ? { ...frame, reason: frame.reason.slice(0, 256) } : frame,
    }),
  );
}
