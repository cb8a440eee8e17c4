/**
 * Integrations: upstream MCP servers from `.paddock/mcp_servers.yaml` (client pool on the MCP
 * v2 client SDK) and in-process plugins, both as ordinary registry tools.
 */
export {
  parseToolCall,
  type Rendered,
  renderError,
  renderToolResult,
  serverLogs,
  serversList,
  serverTools,
  type ToolSummary,
} from './cli.js';
export {
  DEFAULT_MAX_RESULT_BYTES,
  McpClientPool,
  type McpClientPoolOptions,
  type PoolCallOptions,
  type ServerState,
  type ServerStatus,
  type UpstreamToolDef,
} from './client-pool.js';
export {
  type HttpServerConfig,
  type LoadedMcpServers,
  type LoadMcpServersOptions,
  loadMcpServers,
  type McpServerConfig,
  type StdioServerConfig,
} from './load-config.js';
export { MAX_TOOL_NAME_LENGTH, sanitizeName, upstreamToolName } from './naming.js';
export {
  type BrandedToolResult,
  defineTool,
  type LoadedPlugins,
  loadPlugins,
  type PluginStatus,
  type PluginTool,
  type ToolSpec,
  toolResult,
} from './plugins.js';
export {
  type IntegrationPermissionRule,
  type IntegrationServerStatus,
  type IntegrationsOptions,
  IntegrationsService,
  type ToolsChangedEvent,
} from './service.js';
export type { UpstreamTool } from './upstream-tools.js';
