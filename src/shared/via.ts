/**
 * How a tool call arrived: straight from a caller, through a command's tool channel, from an
 * agent run or a schedule, from a dock page (WebMCP), or from an MCP App view that a chat host
 * renders (`app`: a call of a tool only a view may call).
 */
export type Via = 'direct' | 'channel' | 'agent' | 'schedule' | 'webmcp' | 'app';
