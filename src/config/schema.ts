import { z } from 'zod';
import { principalsSchema } from './principals-schema.js';
import { storeSchema } from './store-schema.js';

const permission = z.enum(['auto', 'ask', 'deny']);

/** An executable the policy allows, with optional argument rules. */
export const execRuleSchema = z
  .object({
    name: z
      .string()
      .min(1)
      .describe('Bare executable name (resolved against the computer PATH) or an absolute path.'),
    denyArgs: z
      .array(z.string().min(1))
      .default([])
      .describe('Argument patterns refused for this executable (globs, e.g. "-c", "--upload-pack*").'),
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string())
      .optional()
      .describe('Environment set for this executable, over everything else (e.g. a config file to use).'),
    args: z
      .array(z.string())
      .optional()
      .describe("Arguments inserted right after the executable name, before the caller's."),
    helpers: z
      .array(z.string().min(1))
      .optional()
      .describe(
        "Absolute paths of other programs this executable may start when `shell` runs it: a file, or a directory for every program in it (e.g. /usr/lib/git-core for git's own helpers). Nothing else runs: the kernel refuses to execute any file but the executable, these helpers and the loaders and interpreters they need, and lets them write only under files.write.",
      ),
    trustConfig: z
      .boolean()
      .optional()
      .describe(
        'Let the executable read configuration the caller can write. Off: Paddock pins it for programs known to run commands from config (git: no global/system config, hooks, fsmonitor, pager or aliases).',
      ),
  })
  .strict();

/** A header the egress proxy attaches to requests for one named domain (TLS terminated for https). */
export const httpInjectSchema = z
  .object({
    domain: z
      .string()
      .min(1)
      .describe('Exactly one host name (no wildcard); requests to it get the headers.'),
    headers: z
      .record(z.string().regex(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/, 'must be an HTTP header name'), z.string())
      // biome-ignore lint/suspicious/noTemplateCurlyInString: documents the ${VAR} syntax
      .describe('Header name → value; `${VAR}` in a value expands from the server environment at use.'),
  })
  .strict();

export const policySchema = z
  .object({
    files: z
      .object({
        read: z
          .array(z.string())
          .default(['/workspace', '/tmp'])
          .describe('Absolute guest roots readable by file tools.'),
        write: z
          .array(z.string())
          .default(['/workspace', '/tmp'])
          .describe('Absolute guest roots writable by file tools.'),
        deny: z
          .array(z.string())
          .default([])
          .describe('Absolute guest roots refused for reading and writing.'),
      })
      .strict()
      .default({ read: ['/workspace', '/tmp'], write: ['/workspace', '/tmp'], deny: [] })
      .describe('Path whitelist for file.read and file.write.'),
    exec: z
      .object({
        allow: z.array(execRuleSchema).default([]).describe('Executables the `shell` tool may run.'),
        deny: z
          .array(z.string())
          .default([])
          .describe('Executables always refused (names or absolute paths).'),
        path: z
          .array(z.string())
          .default(['/usr/local/bin', '/usr/bin', '/bin'])
          .describe('The fixed PATH bare names resolve against (never a writable directory).'),
      })
      .strict()
      .default({ allow: [], deny: [], path: ['/usr/local/bin', '/usr/bin', '/bin'] })
      .describe('Executable whitelist for the exec action.'),
    http: z
      .object({
        allow: z
          .array(z.string())
          .default([])
          .describe('Domains (`api.example.com`, `*.example.com` for subdomains), optionally with `:port`.'),
        deny: z.array(z.string()).default([]).describe('Domains always refused, checked before allow.'),
        hosts: z
          .record(z.string().min(1), z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]))
          .default({})
          .describe(
            'Static name → address map (like extra_hosts): the name resolves to these addresses, which count as named by a rule.',
          ),
        inject: z
          .array(httpInjectSchema)
          .default([])
          .describe(
            'Headers the egress proxy adds to requests for one domain; values come from the server, never the computer.',
          ),
        ask: z
          .union([z.literal('unknown'), z.array(z.string())])
          .default([])
          .describe(
            "Destinations of a computer's connections that a person may allow while the connection waits (dock or CLI): host patterns written like http.allow, or `unknown` for every host name no rule decides. With nobody to ask, the connection is refused at once.",
          ),
      })
      .strict()
      .default({ allow: [], deny: [], hosts: {}, inject: [], ask: [] })
      .describe('Domain whitelist for http_get, http_post, notify and the egress of computers.'),
    tcp: z
      .object({
        allow: z
          .array(z.string())
          .default([])
          .describe(
            'host:port destinations a computer may open any TCP connection to (ssh, databases): `git.example.test:22`, `*.db.internal:5432`. Same wildcards and address guard as http.allow; the port is required. policy.http.deny applies first.',
          ),
      })
      .strict()
      .default({ allow: [] })
      .describe('TCP whitelist for the egress of computers (protocols other than HTTP).'),
  })
  .strict();

export type PolicyConfig = z.infer<typeof policySchema>;
export type ExecRule = z.infer<typeof execRuleSchema>;
export type HttpInjectRule = z.infer<typeof httpInjectSchema>;

export const serverSchema = z
  .object({
    host: z
      .string()
      .min(1)
      .default('127.0.0.1')
      .describe('Address `paddock serve` binds; loopback by default.'),
    port: z
      .number()
      .int()
      .min(0)
      .max(65535)
      .default(7420)
      .describe('Port of the dock and the /mcp endpoint (0 = any free port).'),
    auth: z
      .enum(['token', 'none'])
      .default('token')
      .describe(
        '`token`: /mcp and the dock need the server token; `none` is only accepted on a loopback host.',
      ),
    publicUrl: z
      .string()
      .url()
      .optional()
      .describe('The URL people and agents use to reach the dock, if not http://<host>:<port>.'),
    stalledPeerSeconds: z
      .number()
      .positive()
      .max(3600)
      .default(30)
      .describe(
        'How long an MCP peer (HTTP response stream or socket session) may leave what the server sends it unread before it is dropped.',
      ),
    allowedHosts: z
      .array(z.string().min(1))
      .default([])
      .describe(
        'Extra Host header names accepted (DNS-rebinding protection); loopback names are always accepted on loopback.',
      ),
    oauth: z
      .object({
        enabled: z
          .boolean()
          .default(true)
          .describe(
            'Let MCP clients sign in with OAuth (approved by a person in the dock) besides the token.',
          ),
        accessTokenTtlSeconds: z
          .number()
          .int()
          .min(1)
          .max(86_400)
          .default(3_600)
          .describe('Life of an OAuth access token; clients refresh it with their refresh token.'),
        registrationsPerMinute: z
          .number()
          .int()
          .min(1)
          .max(1_000)
          .default(20)
          .describe('Dynamic client registrations accepted per minute, all clients together.'),
      })
      .strict()
      .default({ enabled: true, accessTokenTtlSeconds: 3_600, registrationsPerMinute: 20 })
      .describe('OAuth 2.1 sign-in of MCP clients (only with auth: token).'),
  })
  .strict();

export const mcpSchema = z
  .object({
    toolsets: z
      .array(z.string().min(1))
      .default([])
      .describe(
        'Tool sets the MCP endpoints expose (`computer`, `builtin`, `integrations`, a server name); empty = all.',
      ),
    idleExitSeconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 24 * 3600)
      .default(600)
      .describe(
        'A server that `paddock mcp` started stops after this many seconds with no client, no dock page and no running computer (0: never). A server started with `paddock serve` never stops by itself.',
      ),
  })
  .strict();

/** Who may decide an approval: the person in the MCP client itself (elicitation), the dock, the CLI. */
const decider = z.enum(['elicitation', 'dock', 'cli']);
const thirdPartyDecider = z.enum(['dock', 'cli'], {
  message:
    'third parties are decided for in the dock or the CLI only; "elicitation" would let a client approve itself',
});

export const decidersSchema = z
  .object({
    owner: z
      .array(decider)
      .default(['elicitation', 'dock', 'cli'])
      .describe(
        "Who decides the owner's own MCP clients' `ask` calls. `elicitation`: the owner's client asks its person and that answer decides; leave it out and the client is only told, while the dock or the CLI decides.",
      ),
    clients: z
      .array(thirdPartyDecider)
      .default(['dock', 'cli'])
      .describe(
        "Who decides an OAuth client's `ask` calls (never the client itself: what it is shown is information only). An empty list: nobody, so each call waits for its expiry and is denied.",
      ),
    agents: z
      .array(thirdPartyDecider)
      .default(['dock', 'cli'])
      .describe("Who decides an agent's `ask` calls (when the agent may wait for approval)."),
  })
  .strict();

export const approvalsSchema = z
  .object({
    deciders: decidersSchema
      .default(decidersSchema.parse({}))
      .describe('Who may decide approvals, by whose call it is (owner, OAuth clients, agents).'),
    mcp: z
      .enum(['client', 'gateway'])
      .optional()
      .describe(
        'Who waits for `ask` tools of MCP clients: `client` (the client confirms, as before) or `gateway` (a person approves in the client by elicitation, in the dock or with `paddock approvals`). Default: gateway when the client declared elicitation or a dock page is open, else client.',
      ),
    timeoutSeconds: z
      .number()
      .int()
      .min(5)
      .max(3_600)
      .default(300)
      .describe('How long an MCP call waits for a decision (bounded by its deadline); expiry is a denial.'),
    maxPendingPerCaller: z
      .number()
      .int()
      .min(1)
      .max(1_000)
      .default(10)
      .describe('Pending approvals one caller may have at once; more are refused with LIMIT_EXCEEDED.'),
  })
  .strict();

/** Builds the full paddock.yaml schema from the sections of each module. */
export function buildConfigSchema<S extends z.ZodRawShape>(extra: S) {
  return z
    .object({
      server: serverSchema.default(serverSchema.parse({})).describe('The HTTP server (dock, /mcp).'),
      mcp: mcpSchema.default({ toolsets: [], idleExitSeconds: 600 }).describe('MCP endpoint options.'),
      approvals: approvalsSchema
        .default(approvalsSchema.parse({}))
        .describe('Approvals of `ask` tools: who waits, for how long.'),
      policy: policySchema
        .default(policySchema.parse({}))
        .describe('The whitelist policy: paths, executables, domains.'),
      permissions: z
        .record(z.string().min(1), permission)
        .default({})
        .describe('Tool-name globs → auto | ask | deny. The most specific pattern wins.'),
      principals: principalsSchema
        .default(principalsSchema.parse({}))
        .describe(
          "Who may hold what: quotas of each OAuth client and agent, the owner's reserve, and explicit memory sharing (docs/principals.md).",
        ),
      plugins: z
        .array(z.string().min(1))
        .default([])
        .describe('Extra plugin module paths (besides .paddock/plugins/).'),
      store: storeSchema
        .default({})
        .describe(
          'The stores of audit rows, memories, agent runs, launch links, approvals and OAuth clients.',
        ),
      log: z
        .object({
          level: z
            .enum(['debug', 'info', 'warn', 'error'])
            .default('info')
            .describe('Least severe level written to stderr.'),
          json: z.boolean().default(false).describe('One JSON object per line instead of key=value text.'),
        })
        .strict()
        .default({ level: 'info', json: false })
        .describe('Server logs (stderr).'),
      ...extra,
    })
    .strict();
}
