/** The bundle of every store of one Paddock, and how to open one. */
import type { Logger } from '../shared/logger.js';
import type { AgentRunStore } from './agent-runs.js';
import type { ApprovalStore } from './approvals.js';
import type { AuditStore } from './audit.js';
import type { LaunchLinkStore } from './launch-links.js';
import type { MemoryStore } from './memory.js';
import type { OAuthStore } from './oauth.js';
import type { StoreTarget } from './target.js';
import type { ToolPinStore } from './tool-pins.js';

/** Every store of one Paddock, over one database. */
export interface Stores {
  /** Which implementation: `sqlite` (embedded) or `postgres`. */
  readonly kind: StoreTarget['kind'];
  /**
   * Whether other servers may write to the same stores (PostgreSQL). Followers of the audit
   * log then poll `ended`, and agent runs are guarded by leases.
   */
  readonly shared: boolean;
  /** This server's id for this start: the owner of its agent runs' leases. */
  readonly serverId: string;
  readonly audit: AuditStore;
  readonly memory: MemoryStore;
  readonly runs: AgentRunStore;
  readonly launchLinks: LaunchLinkStore;
  readonly approvals: ApprovalStore;
  readonly oauth: OAuthStore;
  /** What each upstream MCP tool looked like when a person trusted it. */
  readonly toolPins: ToolPinStore;
  /** Closes the connection(s); the stores are unusable afterwards. */
  close(): Promise<void>;
}

export interface OpenStoresOptions {
  /** The data directory (the embedded database lives in it). */
  dataDir: string;
  /** Where the database password is read from (`PADDOCK_STORE_PASSWORD`); the process's by default. */
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** This server's id (a fresh one by default). */
  serverId?: string;
}
