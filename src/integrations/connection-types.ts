import type { Client } from '@modelcontextprotocol/client';
import type { Logger } from '../shared/logger.js';
import type { ProcessRef } from './process-tree.js';
import type { UpstreamTransport } from './transports.js';

/** Lifecycle of one upstream server. */
export type ServerState = 'idle' | 'starting' | 'ready' | 'error' | 'disabled';

/** A tool as an upstream server lists it (the fields Paddock keeps). */
export interface UpstreamToolDef {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/** Restart delays: `initialMs` doubling up to `maxMs`, back to `initialMs` after `stableMs` of uptime. */
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  stableMs: number;
}

export interface ConnectionOptions {
  logger: Logger;
  clientInfo: { name: string; version: string };
  maxResultBytes: number;
  backoff: BackoffOptions;
  stderrLines: number;
  /** Wait after closing stdin before SIGTERM, and again before SIGKILL. */
  shutdownGraceMs: number;
  onTools(server: string, tools: UpstreamToolDef[]): void;
  onState(server: string): void;
}

/** One live connection (a generation): a new one is made for every (re)start. */
export interface Live {
  client: Client;
  upstream: UpstreamTransport;
  /** The server's process and its helpers, snapshotted when it became ready. */
  tree: ProcessRef[];
  /** Set when Paddock dropped the connection on purpose, with the reason callers see. */
  closeReason?: string;
  closing: boolean;
}
