import { z } from 'zod';
import { runLimitsSchema } from '../config/agents-schema.js';
import { execRuleSchema } from '../config/schema.js';
import { COMPUTER_NAME_PATTERN } from '../shared/computer-name.js';
import { parseDurationMs } from '../shared/duration.js';

/** Agent and skill names: lower-case letters, digits and single hyphens (the directory name). */
export const NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const NAME_HINT = 'use 1-64 lower-case letters, digits and single hyphens (it is also the directory name)';

/** A list written as a YAML sequence, or as one comma-separated string (`tools: a, b`). */
const nameList = (what: string) =>
  z
    .union([
      z.array(z.string().trim().min(1, `an empty ${what} is not allowed`)),
      z.string().transform((s) =>
        s
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean),
      ),
    ])
    .describe(`${what}: a list, or one comma-separated string`);

const scheduleEntry = z.union([
  z.string().trim().min(1, 'an empty cron expression is not allowed'),
  z
    .object({
      cron: z.string().trim().min(1).describe('Cron expression: 5 fields, or 6 with seconds first.'),
      timezone: z
        .string()
        .min(1)
        .optional()
        .describe('IANA time zone, e.g. Europe/Berlin; default the server’s.'),
      input: z.string().max(65_536).optional().describe('Input text of the runs this schedule starts.'),
    })
    .strict(),
]);

const roots = z.array(z.string()).optional();
const hosts = z.array(z.string()).optional();

/** The `policy` block of AGENT.md: lists that replace (allow) or extend (deny) the global ones. */
export const agentPolicySchema = z
  .object({
    files: z
      .object({ read: roots, write: roots, deny: roots })
      .strict()
      .optional()
      .describe('Guest roots; read/write replace the global lists, deny adds to it.'),
    exec: z
      .object({ allow: z.array(execRuleSchema).optional(), deny: z.array(z.string()).optional() })
      .strict()
      .optional()
      .describe('Executables; allow replaces the global list, deny adds to it.'),
    http: z
      .object({ allow: hosts, deny: hosts })
      .strict()
      .optional()
      .describe('Domains; allow replaces the global list, deny adds to it.'),
    tcp: z
      .object({ allow: hosts })
      .strict()
      .optional()
      .describe('host:port TCP destinations of its computer; allow replaces the global list.'),
  })
  .strict()
  .describe('Narrows the global policy for this agent: an action must pass both.');

/** The parsed `policy` block of an AGENT.md. */
export type AgentPolicy = z.infer<typeof agentPolicySchema>;

/** Keys AGENT.md accepts (for "did you mean" hints). */
export const AGENT_KEYS = [
  'name',
  'description',
  'provider',
  'model',
  'mcp_servers',
  'mcpServers',
  'tools',
  'disallowedTools',
  'skills',
  'schedules',
  'notify',
  'limits',
  'policy',
  'catchUp',
  'computer',
  'approvals',
] as const;

/** Longest an unattended run may wait for one approval. */
export const MAX_APPROVAL_WAIT_MS = 24 * 3_600_000;

const approvalWait = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const ms = parseDurationMs(v);
  if (ms === null || ms < 1000 || ms > MAX_APPROVAL_WAIT_MS) {
    ctx.addIssue({
      code: 'custom',
      message: 'give a duration from 1s to 24h, e.g. 10m, 90s or 2h',
    });
    return z.NEVER;
  }
  return ms;
});

/** The frontmatter of `.paddock/agents/<name>/AGENT.md`. */
export const agentFrontmatterSchema = z
  .object({
    name: z
      .string()
      .max(64)
      .regex(NAME_PATTERN, NAME_HINT)
      .describe('The agent name; equals its directory name.'),
    description: z.string().trim().min(1).max(1024).describe('One or two sentences: what the agent does.'),
    provider: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe('A provider from paddock.yaml `agents.providers`.'),
    model: z.string().min(1).max(200).optional().describe('Model id at the provider.'),
    mcp_servers: nameList('server name')
      .optional()
      .describe('Servers from mcp_servers.yaml the agent may use.'),
    mcpServers: nameList('server name').optional().describe('Alias of mcp_servers.'),
    tools: nameList('tool name or glob')
      .optional()
      .describe('Allow-list of tool names or globs; omitted = the built-ins plus the named servers’ tools.'),
    disallowedTools: nameList('tool name or glob')
      .optional()
      .describe('Tools refused even if `tools` allows them.'),
    skills: nameList('skill name').optional().describe('Skills from .paddock/skills/<name>/SKILL.md.'),
    schedules: z
      .union([scheduleEntry, z.array(scheduleEntry)])
      .optional()
      .describe('Cron expressions (or {cron, timezone, input}) for `paddock serve`.'),
    notify: nameList('channel name')
      .optional()
      .describe('Channels of paddock.yaml `notify` that get the final answer.'),
    limits: runLimitsSchema
      .partial()
      .optional()
      .describe('Budgets of one run: maxTurns, maxTokens, wallTimeMs.'),
    policy: agentPolicySchema.optional(),
    catchUp: z
      .boolean()
      .optional()
      .describe('Run once at start after missed ticks (default: paddock.yaml agents.catchUp).'),
    computer: z
      .string()
      .regex(COMPUTER_NAME_PATTERN, 'a computer name: lower-case letters, digits and inner dashes')
      .optional()
      .describe(
        'A named computer the runs share (with each other and with sessions naming it); absent: each run gets its own.',
      ),
    approvals: z
      .object({
        wait: approvalWait.describe(
          'How long one call of an `ask` tool waits for a person (dock, CLI), e.g. 10m; expiry is a denial.',
        ),
      })
      .strict()
      .optional()
      .describe('Lets an unattended run wait for approvals; without it `ask` tools are refused.'),
  })
  .strict();

/** A parsed AGENT.md frontmatter. */
export type AgentFrontmatter = z.infer<typeof agentFrontmatterSchema>;

/** Keys SKILL.md accepts (the Agent Skills format). */
export const SKILL_KEYS = [
  'name',
  'description',
  'license',
  'compatibility',
  'metadata',
  'allowed-tools',
] as const;

/** The frontmatter of `.paddock/skills/<name>/SKILL.md` (Agent Skills format). */
export const skillFrontmatterSchema = z
  .object({
    name: z
      .string()
      .max(64)
      .regex(NAME_PATTERN, NAME_HINT)
      .describe('The skill name; equals its directory name.'),
    description: z.string().trim().min(1).max(1024).describe('What the skill does and when to use it.'),
    license: z.string().min(1).max(500).optional().describe('License name or a bundled license file.'),
    compatibility: z.string().min(1).max(500).optional().describe('Environment requirements.'),
    metadata: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String))
      .optional()
      .describe('Free key-value pairs.'),
    'allowed-tools': z
      .union([z.string().transform((s) => s.split(/[\s,]+/).filter(Boolean)), z.array(z.string().min(1))])
      .optional()
      .describe('Tools the skill expects, space-delimited.'),
  })
  .strict();

/** A parsed SKILL.md frontmatter. */
export type SkillFrontmatter = z.infer<typeof skillFrontmatterSchema>;
