/**
 * Launch links: a stored boot spec (profile + optional startup script) behind `/launch/<id>`.
 * Creating one runs nothing; booting one is an explicit step (the dock's confirm page or
 * `paddock launch <id>`).
 */
import type { Database } from '../audit/database.js';
import { PaddockError } from '../shared/errors.js';
import { randomId } from '../shared/ids.js';

/** Largest startup script, in UTF-8 bytes. */
export const MAX_STARTUP_SCRIPT_BYTES = 2 * 1024 * 1024;

/** A stored launch link. */
export interface LaunchLink {
  id: string;
  /** Epoch milliseconds. */
  createdAt: number;
  profileId: string;
  /** Empty when the link only boots the profile. */
  startupScript: string;
}

const ID_PATTERN = /^[A-Za-z0-9_-]{8,64}$/;

/** Launch links over the `launch_links` table. */
export class LaunchLinkStore {
  private readonly insert;
  private readonly select;

  constructor(db: Database) {
    this.insert = db.prepare(
      'INSERT INTO launch_links (id, created_at, profile_id, startup_script) VALUES (?, ?, ?, ?)',
    );
    this.select = db.prepare(
      'SELECT id, created_at, profile_id, startup_script FROM launch_links WHERE id = ?',
    );
  }

  /** Stores a new link. */
  create(profileId: string, startupScript: string): LaunchLink {
    if (Buffer.byteLength(startupScript) > MAX_STARTUP_SCRIPT_BYTES) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        'The startup script is larger than 2 MiB; shorten it or have it download the rest.',
      );
    }
    const link: LaunchLink = { id: randomId('', 12), createdAt: Date.now(), profileId, startupScript };
    this.insert.run(link.id, link.createdAt, link.profileId, link.startupScript);
    return link;
  }

  /** A link by id; INVALID_ARGUMENT when malformed, NOT_FOUND when unknown. */
  get(id: string): LaunchLink {
    if (!ID_PATTERN.test(id)) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `"${id.slice(0, 80)}" is not a launch link id; copy the id from the /launch/<id> URL.`,
      );
    }
    const row = this.select.get(id) as
      | { id: string; created_at: number; profile_id: string; startup_script: string }
      | undefined;
    if (!row)
      throw new PaddockError(
        'NOT_FOUND',
        `No launch link "${id}"; check the URL or create a new link with create_launch_link.`,
      );
    return {
      id: row.id,
      createdAt: row.created_at,
      profileId: row.profile_id,
      startupScript: row.startup_script,
    };
  }
}
