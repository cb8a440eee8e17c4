import { z } from 'zod';

const permission = z.enum(['auto', 'ask', 'deny']);

// biome-ignore lint/suspicious/noTemplateCurlyInString: documents the configuration syntax, not a template
const EXPANDED = 'Variables are expanded: ${NAME}, or ${NAME:-default} when unset or empty.';

/** A scalar written in YAML as a number or boolean (`PORT: 3001`) is used as its string form. */
const stringish = z.union([z.string(), z.number(), z.boolean()]).transform((v) => String(v));

/** Transports a server entry may name in `type`; aliases used by other MCP clients are accepted. */
export const MCP_SERVER_TYPES = ['stdio', 'http', 'streamable-http', 'streamableHttp', 'sse'] as const;

/** Keys of a server entry that Paddock reads (Claude Desktop's, plus Paddock's own options). */
export const MCP_SERVER_KNOWN_KEYS = [
  'type',
  'command',
  'args',
  'env',
  'cwd',
  'url',
  'headers',
  'enabled',
  'disabled',
  'timeoutMs',
  'permissions',
  'toolsets',
  'startup',
  'pins',
] as const;

/**
 * Keys other MCP clients write into server entries (Cline, Roo, Windsurf, Cursor, VS Code).
 * They are accepted so such a file loads unchanged; Paddock does not act on them.
 */
export const MCP_SERVER_FOREIGN_KEYS = [
  'autoApprove',
  'alwaysAllow',
  'timeout',
  'transportType',
  'envFile',
  'description',
  'name',
  'note',
  'notes',
  'icon',
] as const;

/**
 * One entry of `mcpServers`. The Claude Desktop / Cursor / Claude Code shape (`command`,
 * `args`, `env`, `cwd` for stdio; `type`, `url`, `headers` for HTTP) plus Paddock's own
 * options. Keys of other clients pass (see {@link MCP_SERVER_FOREIGN_KEYS}); the loader rejects
 * near-misses of known keys as typos and reports other extra keys as ignored.
 */
export const mcpServerEntrySchema = z
  .object({
    type: z
      .enum(MCP_SERVER_TYPES)
      .optional()
      .describe(
        'Transport: `stdio` (a local process), `http` / `streamable-http` (Streamable HTTP) or `sse` (legacy HTTP+SSE). ' +
          'Inferred when absent: `command` means stdio, `url` means Streamable HTTP.',
      ),
    command: z
      .string()
      .min(1)
      .optional()
      .describe(
        `Executable that starts a stdio server (\`npx\`, \`uvx\`, \`node\`, an absolute path). ${EXPANDED}`,
      ),
    args: z
      .array(stringish)
      .default([])
      .describe(`Arguments passed to \`command\`, as is (no shell). ${EXPANDED}`),
    env: z
      .record(z.string().min(1), stringish)
      .default({})
      .describe(
        'Environment variables for the server process, added to a minimal inherited set (HOME, PATH, USER…). ' +
          EXPANDED,
      ),
    cwd: z
      .string()
      .min(1)
      .optional()
      .describe(`Working directory of the server process; relative to the project directory. ${EXPANDED}`),
    url: z
      .string()
      .min(1)
      .optional()
      .describe(`Endpoint of an HTTP server, e.g. \`https://mcp.example.com/mcp\`. ${EXPANDED}`),
    headers: z
      .record(z.string().min(1), stringish)
      .default({})
      .describe(
        'HTTP headers sent with every request (e.g. an Authorization header with a token variable). ' +
          EXPANDED,
      ),
    enabled: z
      .boolean()
      .default(true)
      .describe('Paddock option: `false` keeps the entry but neither starts nor lists it.'),
    disabled: z
      .boolean()
      .optional()
      .describe('Compatibility with other clients: `disabled: true` is the same as `enabled: false`.'),
    timeoutMs: z
      .number()
      .int()
      .min(100)
      .max(600_000)
      .default(10_000)
      .describe(
        'Paddock option: how long starting the server (spawn or connect, initialize, first tools/list) may take.',
      ),
    permissions: z
      .record(z.string().min(1), permission)
      .default({})
      .describe(
        "Paddock option: the server's own tool names (globs allowed, e.g. `create_*`) → auto | ask | deny. Unlisted upstream tools are `ask`.",
      ),
    toolsets: z
      .array(
        z
          .string()
          .regex(/^[a-z0-9][a-z0-9_-]*$/, 'use lower-case letters, digits, `_` and `-`')
          .describe('A tool set name.'),
      )
      .default([])
      .describe(
        "Paddock option: extra tool sets this server's tools belong to (they are always in `integrations` and in one named after the server).",
      ),
    startup: z
      .enum(['lazy', 'eager'])
      .default('lazy')
      .describe(
        'Paddock option: `eager` starts the server with Paddock and keeps it running; `lazy` starts it on its first call ' +
          '(its tool list comes from the cache of the last run, else from a one-off background discovery).',
      ),
    pins: z
      .record(
        z.string().min(1).describe("A tool's name as the server lists it."),
        z
          .string()
          .regex(
            /^(sha256:)?[0-9a-f]{64}$/,
            'give the 64 hex digits of a SHA-256 (optionally after `sha256:`)',
          )
          .transform((v) => v.replace(/^sha256:/, ''))
          .describe(
            "The SHA-256 of the tool's canonical definition, as `paddock servers tools <server>` shows it.",
          ),
      )
      .optional()
      .describe(
        'Paddock option: the exact tools this server must list, with the hash of each definition (for CI deployments). ' +
          'A listing that differs — a changed hash, an extra or a missing tool — refuses to start the server, naming the tool. ' +
          'Without it, tools are pinned in the store when first seen and a change waits for a review.',
      ),
  })
  .loose();

/**
 * The whole `mcp_servers.yaml` / `mcp_servers.json` file: the `mcpServers` map that Claude
 * Desktop, Cursor and Claude Code use. Other top-level keys (a Claude Desktop config carries
 * `globalShortcut`, `preferences`…) are ignored.
 */
export const mcpServersFileSchema = z
  .object({
    mcpServers: z
      .record(
        z.string().min(1).describe('Server name: prefixes its tools (`<server>_<tool>`).'),
        mcpServerEntrySchema,
      )
      .describe('Upstream MCP servers by name.'),
  })
  .loose();

export type McpServerEntry = z.infer<typeof mcpServerEntrySchema>;
export type McpServersFile = z.infer<typeof mcpServersFileSchema>;
