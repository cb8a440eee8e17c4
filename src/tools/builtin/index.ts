import type { MemoryStore } from '../../audit/types.js';
import type { NotifyConfig } from '../../config/notify-schema.js';
import { createHttpClient, type HttpClient, type HttpClientOptions } from '../../net/http-client.js';
import { createNotifier, type Notifier } from '../../net/notifier.js';
import { createSystemHostResolver } from '../../policy/dns.js';
import type { HostResolver } from '../../policy/types.js';
import type { Logger } from '../../shared/logger.js';
import type { Tool } from '../tool.js';
import { createHttpGetTool } from './http-get.js';
import { createHttpPostTool } from './http-post.js';
import { createNotifyTool } from './notify.js';
import { createRecallMemoryTool } from './recall-memory.js';
import { createSaveMemoryTool, type MemoryToolDeps } from './save-memory.js';

export { createHttpGetTool } from './http-get.js';
export { createHttpPostTool } from './http-post.js';
export { createNotifyTool } from './notify.js';
export { createRecallMemoryTool, DEFAULT_RECALL_LIMIT, MAX_RECALL_LIMIT } from './recall-memory.js';
export {
  createSaveMemoryTool,
  defaultNamespaceOf,
  MAX_MEMORY_BYTES,
  type MemoryToolDeps,
  type NamespaceOf,
} from './save-memory.js';

/** What the built-ins that need no computer are made of. */
export interface BuiltinToolDeps {
  memory: MemoryStore;
  /** The `notify` section of paddock.yaml. */
  notify: NotifyConfig;
  /** HTTP client limits and TLS trust (defaults: 1 MiB responses, 10 MiB at most, 30 s, 5 redirects). */
  http?: Omit<HttpClientOptions, 'dns'>;
  /** Resolves host names for the policy and the client; the system resolver by default. */
  dns?: HostResolver;
  /** Memory namespace of a caller; `defaultNamespaceOf` by default. */
  namespaceOf?: MemoryToolDeps['namespaceOf'];
  /** Share a notifier with the agent runner; built from `notify` when absent. */
  notifier?: Notifier;
  /** Share an HTTP client with the notifier and the agent runner; built from `http` when absent. */
  httpClient?: HttpClient;
  /** Logger of the notifier's `log` channel outside tool calls (tool calls use their own). */
  logger?: Logger;
}

/** The memory tools: save_memory and recall_memory over one store. */
export function createMemoryTools(deps: MemoryToolDeps): Tool[] {
  return [createSaveMemoryTool(deps), createRecallMemoryTool(deps)];
}

/** An HTTP client and notifier as the built-ins would build them (for the agent runner). */
export function createBuiltinServices(deps: BuiltinToolDeps): { http: HttpClient; notifier: Notifier } {
  const http =
    deps.httpClient ?? createHttpClient({ ...deps.http, dns: deps.dns ?? createSystemHostResolver() });
  const notifier =
    deps.notifier ??
    createNotifier({
      config: deps.notify,
      http,
      ...(deps.logger === undefined ? {} : { logger: deps.logger }),
    });
  return { http, notifier };
}

/** http_get, http_post, save_memory, recall_memory and notify. */
export function createBuiltinTools(deps: BuiltinToolDeps): Tool[] {
  const { http, notifier } = createBuiltinServices(deps);
  const memory: MemoryToolDeps = { store: deps.memory };
  if (deps.namespaceOf) memory.namespaceOf = deps.namespaceOf;
  return [
    createHttpGetTool(http),
    createHttpPostTool(http),
    ...createMemoryTools(memory),
    createNotifyTool(notifier),
  ];
}
