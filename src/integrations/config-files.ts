/** The names `mcp_servers.yaml` may take in `.paddock/`; more than one present is a config error. */
export const MCP_SERVERS_FILE_NAMES = ['mcp_servers.yaml', 'mcp_servers.yml', 'mcp_servers.json'] as const;
