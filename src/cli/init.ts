import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { out, parseCommandArgs } from './args.js';

const HELP = `Usage: paddock init [DIR] [--force]

Writes a commented paddock.yaml and the .paddock/ layout (agents/, skills/, plugins/,
mcp_servers.yaml) into DIR (default: the working directory). Existing files are kept
unless --force is given.`;

export const STARTER_CONFIG = `# Paddock configuration. Every key is optional; unknown keys are errors.
# Reference: docs/configuration.md. Check it with \`paddock doctor\`.

server:
  host: 127.0.0.1        # loopback by default; the dock and /mcp need the server token
  port: 7420

# Tool permissions: tool-name globs -> auto | ask | deny (the most specific pattern wins).
# Built-in and computer tools default to auto; upstream MCP tools default to ask.
permissions: {}
  # "github_*": auto
  # "*_delete_*": deny

# Who waits for ask tools of MCP clients (docs/approvals.md). Unset: the gateway holds the call
# for a person when the client can ask by elicitation or a dock page is open, else the client confirms.
# approvals:
#   mcp: gateway           # client | gateway
#   timeoutSeconds: 300

# The whitelist policy every tool checks before it acts.
policy:
  files:
    read: [/workspace, /tmp]       # absolute guest paths inside the computer
    write: [/workspace, /tmp]
    deny: []
  exec:                            # executables the \`shell\` tool may run (argv, no shell)
    allow:
      - name: ls
      - name: cat
      - name: git
        denyArgs: ["-c", "--upload-pack*", "--exec*", "--config*"]
  http:                            # domains for http_get, http_post, notify and computer egress
    allow: []                      # e.g. [api.github.com, "*.slack.com"] (subdomains only)
    # Computers whose profile says \`network: { mode: proxy }\` reach these hosts too. To let
    # package managers and git work, list your language's package registries and their download
    # hosts and your code host, e.g.:
    # allow:
    #   - pypi.org
    #   - files.pythonhosted.org
    #   - registry.npmjs.org
    #   - github.com
    #   - codeload.github.com
    #   - "*.githubusercontent.com"
    deny: []
    hosts: {}                      # static names, e.g. { registry.internal: 10.0.0.7 }
    inject: []                     # headers added by the egress proxy; the value never enters a computer
    # inject:
    #   - domain: api.github.com
    #     headers: { Authorization: "Bearer \${GITHUB_TOKEN}" }
    ask: []                        # hosts a person may allow from the dock while the connection waits
    # ask: unknown                 # ...or every host no rule decides
  tcp:
    allow: []                      # other protocols by host:port, e.g. ["github.com:22"] for git over ssh

log:
  level: info
`;

const STARTER_SERVERS = `# Upstream MCP servers, in the mcpServers shape Claude Desktop and Cursor use.
# Their tools appear as <server>_<tool>. \${VAR} and \${VAR:-default} expand from the environment.
mcpServers: {}
#  github:                  # GitHub's hosted server; /x/<toolset>/readonly narrows it
#    type: http
#    url: https://api.githubcopilot.com/mcp/x/pull_requests/readonly
#    headers:
#      Authorization: Bearer \${GITHUB_TOKEN}
#  local:                   # a server started as a process
#    command: npx
#    args: ["-y", "some-mcp-server"]
#    env:
#      SOME_TOKEN: \${SOME_TOKEN}
`;

export async function initCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs('init', args, {
    force: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    out(HELP);
    return 0;
  }
  const dir = resolve(positionals[0] ?? '.');
  const force = values.force === true;
  const write = (file: string, text: string) => {
    const path = join(dir, file);
    if (existsSync(path) && !force) {
      out(`kept     ${path} (exists; --force to overwrite)`);
      return;
    }
    writeFileSync(path, text);
    out(`wrote    ${path}`);
  };
  mkdirSync(dir, { recursive: true });
  for (const sub of ['agents', 'skills', 'plugins']) {
    mkdirSync(join(dir, '.paddock', sub), { recursive: true });
  }
  write('paddock.yaml', STARTER_CONFIG);
  write(join('.paddock', 'mcp_servers.yaml'), STARTER_SERVERS);
  out('Next: `paddock doctor`, then `paddock serve`.');
  return 0;
}
