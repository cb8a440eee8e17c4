/**
 * What the guest is asked to run for a job: the shell's argv (a long script goes through a file
 * in the agent's own directory), the job's environment in order of precedence, its limits, the
 * hold while the host places it in its family, and its tool channel.
 */
import { CHANNEL_ENV } from '../../channel/wire.js';
import { TOOL_CHANNEL_ROOT } from '../../guest/account.js';
import type { FileScope } from '../../guest/path-scope.js';
import type { CallArgs } from '../../guest/protocol.js';
import type { SandboxInstance } from '../backend/types.js';
import type { GuestClient } from '../link/guest-client.js';
import { baseJobEnv } from '../link/guest-layout.js';
import { jobShell } from '../shell-startup.js';
import type { RunRequest } from './requests.js';
import { channelDir, type ToolChannel } from './tool-channel.js';

/** Above this many UTF-8 bytes a script goes through a file (argv entries are limited to 128 KiB). */
const INLINE_SCRIPT_MAX_BYTES = 100_000;

/** Where the host writes long job scripts: the agent's own directory, and nowhere else. */
const JOB_SCRIPT_SCOPE: FileScope = {
  kind: 'write',
  sets: [{ allow: [{ label: 'job-scripts', root: TOOL_CHANNEL_ROOT }], deny: [] }],
};

/** The exec call of a job. */
export type ExecArgs = CallArgs<'exec'>;

/** What the exec call is made from besides the request. */
export interface ExecParts {
  client: GuestClient;
  instance: SandboxInstance;
  /** The login shell the guest found. */
  shell: string;
  channel: ToolChannel | null;
  profileEnv: Record<string, string>;
  /** Makes the job's egress proxy variables (none without egress); called once the script is placed. */
  egressEnv: () => Record<string, string>;
}

/** The exec call of job `n` of `req`, run from `cwd` with the caller's `env`. */
export async function execArgsOf(
  req: RunRequest,
  n: number,
  cwd: string,
  env: Record<string, string>,
  parts: ExecParts,
): Promise<ExecArgs> {
  const { client, instance, shell, channel } = parts;
  let started = req.argv ? { argv: req.argv, env: {} } : jobShell(shell, { script: req.script });
  const viaFile = !req.argv && Buffer.byteLength(req.script) > INLINE_SCRIPT_MAX_BYTES;
  if (viaFile) {
    // in the agent's own directory: readable by the job, changeable by no job
    const file = `${TOOL_CHANNEL_ROOT}/job-${n}.sh`;
    await client.call(
      'fs.write',
      { path: file, scope: JOB_SCRIPT_SCOPE, overwrite: false },
      { attachment: Buffer.from(req.script) },
    );
    started = jobShell(shell, { file });
  }
  const channelEnv: Record<string, string> = channel
    ? {
        [CHANNEL_ENV.nonce]: channel.nonce,
        [CHANNEL_ENV.dir]: channelDir(n),
        [CHANNEL_ENV.deadline]: String(Date.now() + req.timeoutMs),
      }
    : {};
  // a channel needs the job held until its stderr is identified; cgroups need it anyway
  const hold = instance.familyMechanism === 'cgroup' || channel !== null;
  return {
    stream: n,
    argv: started.argv,
    cwd,
    env: {
      ...baseJobEnv(shell),
      ...parts.profileEnv,
      ...env,
      ...channelEnv,
      ...parts.egressEnv(),
      ...started.env,
    },
    rlimits: instance.jobRlimits,
    hold,
    newSession: true,
    // the shell built-in's cwd was checked by the policy: no link may be swapped into it
    ...(req.argv ? { strictCwd: true } : {}),
    ...(req.confine ? { confine: req.confine } : {}),
    ...(channel ? { toolChannel: { nonce: channel.nonce, dir: channelDir(n) } } : {}),
  };
}
