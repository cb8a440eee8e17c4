/**
 * Room for a new `/mcp` session: the server's session limit and, per principal, the quotas of
 * `principals` in paddock.yaml. Decided over the open sessions; eviction is the caller's.
 */
import { type Principal, principalKey } from '../shared/principal.js';

/** How many `/mcp` sessions each principal may hold (see `principals` in paddock.yaml). */
export interface SessionQuotas {
  /** Sessions one OAuth client may hold at once. */
  perClient: number;
  /** Sessions of the server's total that only the owner may use. */
  ownerReserve: number;
}

/** What room-making reads of an open session. */
export interface RoomSession {
  /** Whose session it is; a client's is renewed from its grant at every request (scopes change). */
  principal: Principal;
  lastSeen: number;
  /** Undefined while the session is still being initialized (such a session is never evicted). */
  transport: { sessionId?: string | undefined };
}

/** Why a session was refused: the setting that limits it, its value and the message for the client. */
export interface RoomRefusal {
  setting: string;
  max: number;
  message: string;
}

/**
 * Makes room for a new session of `principal`, or says which limit refuses it. A client that
 * holds its quota (`principals.clients.maxSessions`) gives up its own least recently used
 * session; the sessions outside the owner's reserve are shared by all clients, and when they
 * are taken a client is refused. The owner may use every session, and when all are taken its
 * own least recently used one is closed (`evict`). Nobody's session is ever closed to make room
 * for another principal.
 */
export function makeRoom(
  sessions: ReadonlyMap<string, RoomSession>,
  principal: Principal,
  maxSessions: number,
  quotas: SessionQuotas | undefined,
  evict: (sessionId: string, principalKey: string, why: string) => void,
): RoomRefusal | null {
  const evictOldest = (key: string, why: string) => {
    const id = oldestOf(sessions, key);
    if (id !== undefined) evict(id, key, why);
    return id !== undefined;
  };
  if (principal.kind === 'client' && quotas) {
    const key = principalKey(principal);
    let own = 0;
    let thirdParty = 0;
    for (const s of sessions.values()) {
      if (s.principal.kind === 'owner') continue;
      thirdParty++;
      if (principalKey(s.principal) === key) own++;
    }
    if (own >= quotas.perClient) {
      if (evictOldest(key, 'principals.clients.maxSessions')) return null;
      return {
        setting: 'principals.clients.maxSessions',
        max: quotas.perClient,
        message: `LIMIT_EXCEEDED: this client already opens ${own} sessions at once, its limit principals.clients.maxSessions (${quotas.perClient}). Wait for them to open, close those you no longer use (HTTP DELETE with their Mcp-Session-Id), and retry.`,
      };
    }
    const shared = Math.max(0, maxSessions - quotas.ownerReserve);
    if (thirdParty >= shared) {
      return {
        setting: 'principals.ownerReserve.sessions',
        max: shared,
        message: `LIMIT_EXCEEDED: the sessions open to clients are all taken (${shared}; principals.ownerReserve.sessions keeps the rest of the server's ${maxSessions} for the owner). Close sessions you no longer use (HTTP DELETE with their Mcp-Session-Id) and retry later.`,
      };
    }
  }
  if (sessions.size < maxSessions) return null;
  if (evictOldest(principalKey(principal), 'server sessions')) return null;
  return {
    setting: 'server sessions',
    max: maxSessions,
    message: `LIMIT_EXCEEDED: this server holds its most sessions (${maxSessions}); retry once one ends.`,
  };
}

/** The least recently used open session of principal `key`; one still being initialized never. */
function oldestOf(sessions: ReadonlyMap<string, RoomSession>, key: string): string | undefined {
  let oldest: [string, RoomSession] | undefined;
  for (const entry of sessions) {
    if (principalKey(entry[1].principal) !== key || entry[1].transport.sessionId === undefined) continue;
    if (!oldest || entry[1].lastSeen < oldest[1].lastSeen) oldest = entry;
  }
  return oldest?.[0];
}
