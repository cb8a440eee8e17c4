/** How a tool call arrived: straight from a caller, through a command's tool channel, from an agent run or a schedule. */
export type Via = 'direct' | 'channel' | 'agent' | 'schedule' | 'webmcp';
