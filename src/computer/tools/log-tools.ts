/**
 * read_logs and create_launch_link.
 */
import { s } from '../../tools/schema.js';
import type { Tool } from '../../tools/tool.js';
import { LOG_LEVELS } from '../logs.js';
import type { ComputerSource } from '../manager.js';
import { computerTool, inputObject, structured } from './common.js';

export function logTools(computers: ComputerSource): Tool[] {
  return [
    computerTool(computers, {
      name: 'read_logs',
      title: 'Read system logs',
      kind: 'answer',
      description:
        "Reads the computer's system log: boots, launches, job starts and exits, timeouts, cancellations, policy denials, rejected calls and errors, each with a level and monotonic milliseconds since the service booted. " +
        'Look here when a launch fails or a call was refused. Continue with nextCursor; a cursor that fell behind the kept entries answers OUTPUT_EXPIRED with an oldestCursor. level keeps only entries of that level among those scanned.',
      input: inputObject(
        {
          cursor: s.string({
            description: 'nextCursor of the previous read; omit to start at the oldest kept entry.',
            maxLength: 200,
          }),
          limit: s.integer({
            description: 'Most entries to return; default 50, maximum 200.',
            minimum: 1,
            maximum: 200,
          }),
          level: s.enum([...LOG_LEVELS], { description: 'Only entries of exactly this level.' }),
        },
        [],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const page = manager.readLogs({
          cursor: input.cursor,
          limit: input.limit ?? 50,
          level: input.level,
        });
        return structured({ ...page });
      },
    }),
    computerTool(computers, {
      name: 'create_launch_link',
      title: 'Create a launch link',
      kind: 'act',
      description:
        'Saves a reproducible starting point — a profile plus an optional startup script — and returns its URL, to share a task, an experiment or a demo. ' +
        'Creating the link runs nothing and opens nothing: when someone opens it, they see the script and the computer boots only after they confirm. ' +
        "The profile defaults to the current computer's. The link does not capture files, processes or terminals of the current computer; put what must be recreated into the startup script.",
      input: inputObject(
        {
          profileId: s.string({
            description: "Profile id from list_profiles; default: the current computer's profile.",
            maxLength: 128,
          }),
          startupScript: s.string({
            description: 'Shell script run in the new computer after someone opens the link and confirms.',
            maxLength: 2097152,
          }),
        },
        [],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const link = await manager.createLaunchLink(input.profileId, input.startupScript ?? '');
        return structured({
          id: link.id,
          url: link.url,
          profileId: link.profileId,
          createdAt: link.createdAt,
          hasStartupScript: link.startupScript.length > 0,
        });
      },
    }),
  ];
}
