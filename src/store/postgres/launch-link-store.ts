/** Launch links on PostgreSQL: a link created on one server opens on every other. */
import {
  checkLaunchLinkId,
  type LaunchLink,
  type LaunchLinkStore,
  launchLinkNotFound,
  newLaunchLink,
} from '../launch-links.js';
import type { PgDatabase } from './database.js';

const STORE = 'launch link';

/** `launch_links` on PostgreSQL. */
export class PgLaunchLinkStore implements LaunchLinkStore {
  constructor(private readonly db: PgDatabase) {}

  async create(profileId: string, startupScript: string): Promise<LaunchLink> {
    const link = newLaunchLink(profileId, startupScript);
    await this.db.run(
      STORE,
      'INSERT INTO launch_links (id, created_at, profile_id, startup_script) VALUES ($1, $2, $3, $4)',
      [link.id, link.createdAt, link.profileId, link.startupScript],
    );
    return link;
  }

  async get(id: string): Promise<LaunchLink> {
    checkLaunchLinkId(id);
    const rows = await this.db.rows<{
      id: string;
      created_at: number;
      profile_id: string;
      startup_script: string;
    }>(STORE, 'SELECT id, created_at, profile_id, startup_script FROM launch_links WHERE id = $1', [id]);
    const row = rows[0];
    if (!row) throw launchLinkNotFound(id);
    return {
      id: row.id,
      createdAt: row.created_at,
      profileId: row.profile_id,
      startupScript: row.startup_script,
    };
  }
}
