import type BetterSqlite3 from 'better-sqlite3';
import {
  checkLaunchLinkId,
  type LaunchLink,
  type LaunchLinkStore,
  launchLinkNotFound,
  newLaunchLink,
} from '../launch-links.js';
import { applyMigrations } from './migrations.js';

/** Launch links over the `launch_links` table. */
export class SqliteLaunchLinkStore implements LaunchLinkStore {
  private readonly insert: BetterSqlite3.Statement;
  private readonly select: BetterSqlite3.Statement;

  constructor(db: BetterSqlite3.Database) {
    applyMigrations(db);
    this.insert = db.prepare(
      'INSERT INTO launch_links (id, created_at, profile_id, startup_script) VALUES (?, ?, ?, ?)',
    );
    this.select = db.prepare(
      'SELECT id, created_at, profile_id, startup_script FROM launch_links WHERE id = ?',
    );
  }

  async create(profileId: string, startupScript: string): Promise<LaunchLink> {
    const link = newLaunchLink(profileId, startupScript);
    this.insert.run(link.id, link.createdAt, link.profileId, link.startupScript);
    return link;
  }

  async get(id: string): Promise<LaunchLink> {
    checkLaunchLinkId(id);
    const row = this.select.get(id) as
      | { id: string; created_at: number; profile_id: string; startup_script: string }
      | undefined;
    if (!row) throw launchLinkNotFound(id);
    return {
      id: row.id,
      createdAt: row.created_at,
      profileId: row.profile_id,
      startupScript: row.startup_script,
    };
  }
}
