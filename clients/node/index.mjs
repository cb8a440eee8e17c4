// ESM entry of the Node client: `import { callTool } from 'paddock-tool'`.
import client from './index.cjs';

export const { listTools, callTool, ToolError } = client;
export default client;
