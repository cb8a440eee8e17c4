/**
 * `principals` in paddock.yaml: what each party other than the owner may hold at once (OAuth
 * clients and agents, each on its own), the share of the server only the owner may use, and
 * explicit sharing of memories. See docs/principals.md.
 */
import { z } from 'zod';

const count = (max: number) => z.number().int().min(0).max(max);

export const clientQuotaSchema = z
  .object({
    maxSessions: count(1000)
      .min(1)
      .default(16)
      .describe(
        "MCP sessions (over HTTP) one OAuth client may hold at once; its next initialize closes its own least recently used session (never another principal's).",
      ),
    maxComputers: count(1000)
      .default(2)
      .describe(
        "Computers one OAuth client may have booting or running at once (its sessions' private ones; named computers count as the owner's).",
      ),
    maxJobs: count(10_000)
      .default(8)
      .describe('Jobs (run_command, shell) one OAuth client may have running at once, across its computers.'),
  })
  .strict();

export const agentQuotaSchema = z
  .object({
    maxComputers: count(1000)
      .default(4)
      .describe(
        'Private computers one agent (all of its runs together) may have booting or running at once.',
      ),
    maxJobs: count(10_000)
      .default(16)
      .describe('Jobs one agent (all of its runs together) may have running at once.'),
  })
  .strict();

export const ownerReserveSchema = z
  .object({
    sessions: count(256)
      .default(64)
      .describe(
        'MCP sessions of the server (256 over HTTP) that no client may take: they stay for the owner.',
      ),
    computers: count(1000)
      .default(2)
      .describe(
        'Of computer.maxComputers, computers that clients and agents together may never take: they stay for the owner.',
      ),
  })
  .strict();

/** Memory namespace of a principal key (`client:<id>`, `agent:<name>`). */
const principalKeyPattern = /^(?:owner|client:[A-Za-z0-9_-]{1,64}|agent:[A-Za-z0-9_.-]{1,64})$/;

export const principalsSchema = z
  .object({
    clients: clientQuotaSchema
      .default(clientQuotaSchema.parse({}))
      .describe('What each OAuth client may hold at once.'),
    agents: agentQuotaSchema
      .default(agentQuotaSchema.parse({}))
      .describe('What each agent may hold at once.'),
    ownerReserve: ownerReserveSchema
      .default(ownerReserveSchema.parse({}))
      .describe('The share of the server only the owner may use; no client or agent can take it.'),
    memory: z
      .record(z.string(), z.string().min(1).max(200))
      .superRefine((map, ctx) => {
        for (const key of Object.keys(map))
          if (!principalKeyPattern.test(key))
            ctx.addIssue({
              code: 'custom',
              path: [key],
              message: `"${key.slice(0, 80)}" is not a principal: write owner, client:<id> (from paddock clients list) or agent:<name>.`,
            });
      })
      .default({})
      .describe(
        'Memory namespaces given explicitly, by principal (e.g. "client:cl_x": mcp lets that client share the owner\'s notes). Without an entry a client saves and recalls under client:<id> and an agent under agent:<name>.',
      ),
  })
  .strict();

export type PrincipalsConfig = z.infer<typeof principalsSchema>;
