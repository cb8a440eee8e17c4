import { z } from 'zod';
import { headerRecord, httpUrl } from './fragments.js';

const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Budgets of one run; AGENT.md `limits` override them per agent. */
export const runLimitsSchema = z
  .object({
    maxTurns: z
      .number()
      .int()
      .min(1)
      .max(500)
      .describe(
        'Most model calls in one run; a run that still wants tools after this many stops as `limit`.',
      ),
    maxTokens: z
      .number()
      .int()
      .min(100)
      .max(50_000_000)
      .describe('Most tokens (prompt plus completion, summed over the turns) one run may use.'),
    wallTimeMs: z
      .number()
      .int()
      .min(1_000)
      .max(86_400_000)
      .describe('Longest a run may take from start to final answer, in milliseconds.'),
  })
  .strict();

/** Default budgets of a run. */
export const DEFAULT_RUN_LIMITS = { maxTurns: 20, maxTokens: 200_000, wallTimeMs: 600_000 } as const;

/** One model provider reached over plain HTTP. */
export const providerSchema = z
  .object({
    type: z
      .enum(['openai', 'anthropic'])
      .describe(
        'Wire format: `openai` (chat completions, also spoken by many local and hosted servers) or `anthropic` (messages).',
      ),
    baseUrl: httpUrl
      .optional()
      .describe(
        'Endpoint root, e.g. http://127.0.0.1:11434/v1 for a local OpenAI-compatible server. Defaults to the vendor API of `type`. ' +
          'Provider traffic is the operator’s own configuration and is not checked against the agent domain policy.',
      ),
    model: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('Model used when an AGENT.md names this provider without a `model`.'),
    apiKeyEnv: z
      .string()
      .regex(ENV_NAME, 'must be an environment variable name')
      .optional()
      .describe(
        'Environment variable holding the API key. Default OPENAI_API_KEY for `openai`, ANTHROPIC_API_KEY for `anthropic`.',
      ),
    apiKeyFile: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe(
        'File holding the API key, relative to the data directory (default `keys/<provider name>`); read when the variable is unset.',
      ),
    keyRequired: z
      .boolean()
      .default(true)
      .describe('`false` for local servers that need no key: requests are then sent without one.'),
    headers: headerRecord
      .default({})
      .describe('Extra request headers (e.g. an organisation id). Never put the key here; use apiKeyEnv.'),
    timeoutMs: z
      .number()
      .int()
      .min(1_000)
      .max(900_000)
      .default(120_000)
      .describe('How long one model call may take; the run’s remaining wall time bounds it further.'),
    maxRetries: z
      .number()
      .int()
      .min(0)
      .max(8)
      .default(3)
      .describe('Retries of a call answered with HTTP 429 or 5xx (or a dropped connection), with backoff.'),
    maxOutputTokens: z
      .number()
      .int()
      .min(16)
      .max(200_000)
      .optional()
      .describe(
        'Largest completion requested per model call (`max_tokens` for anthropic, default 4096; `max_completion_tokens` for openai, sent only when set).',
      ),
  })
  .strict();

/** The `agents` section of paddock.yaml. */
export const agentsConfigSchema = z
  .object({
    defaultProvider: z
      .string()
      .regex(PROVIDER_NAME, 'must be a provider name')
      .optional()
      .describe('Provider of agents whose AGENT.md names none.'),
    providers: z
      .record(z.string().regex(PROVIDER_NAME, 'use lower-case letters, digits, "_" and "-"'), providerSchema)
      .default({})
      .describe(
        'Model providers by name. `openai` and `anthropic` exist without configuration (vendor endpoints, keys from ' +
          'OPENAI_API_KEY / ANTHROPIC_API_KEY); an entry with one of those names replaces the built-in one.',
      ),
    limits: runLimitsSchema
      .default({ ...DEFAULT_RUN_LIMITS })
      .describe('Default budgets of a run (20 turns, 200,000 tokens, 10 minutes).'),
    catchUp: z
      .boolean()
      .default(true)
      .describe(
        'After the server was down across scheduled ticks: `true` runs each such agent once at start (never once per missed tick), `false` skips them.',
      ),
    toolResultMaxBytes: z
      .number()
      .int()
      .min(1024)
      .max(1_048_576)
      .default(32_768)
      .describe(
        'A tool result longer than this is cut before the model sees it (the audit log keeps its size).',
      ),
    runLease: z
      .object({
        ttlMs: z
          .number()
          .int()
          .min(1_000)
          .max(3_600_000)
          .default(60_000)
          .describe(
            'How long a run stays its server’s without a renewal; after it another server marks the run failed.',
          ),
        renewEveryMs: z
          .number()
          .int()
          .min(100)
          .max(600_000)
          .default(15_000)
          .describe('How often a server renews its runs’ leases and sweeps expired ones; well under ttlMs.'),
      })
      .strict()
      .refine((l) => l.renewEveryMs * 2 <= l.ttlMs, {
        message: 'renewEveryMs must be at most half of ttlMs, so one late renewal never loses a live run',
      })
      .default({ ttlMs: 60_000, renewEveryMs: 15_000 })
      .describe(
        'Leases of agent runs, for servers sharing a store: a run whose server stops renewing it is marked failed by another server once its lease passes.',
      ),
    discoveryTimeoutMs: z
      .number()
      .int()
      .min(0)
      .max(120_000)
      .default(20_000)
      .describe(
        'How long a run waits for upstream servers named in its AGENT.md to list their tools before it starts.',
      ),
  })
  .strict();

/** The parsed `agents` section. */
export type AgentsConfig = z.infer<typeof agentsConfigSchema>;
/** One parsed provider entry. */
export type ProviderConfig = z.infer<typeof providerSchema>;
/** Budgets of a run. */
export type RunLimits = z.infer<typeof runLimitsSchema>;
