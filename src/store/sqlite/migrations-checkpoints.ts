/**
 * The SQLite step that links approved calls to the checkpoint taken before them (see
 * docs/checkpoints.md, "Checkpoints before approved calls"), listed in migrations.ts.
 */
import type { Migration } from './migrations.js';

/** The checkpoint before a call, named by its audit row and by the approval that let it run. */
export const CALL_CHECKPOINTS_MIGRATION: Migration = {
  version: 15,
  name: 'call_checkpoints',
  // Rows and approvals written before this step keep NULL: no checkpoint was taken for them.
  sql: `
    ALTER TABLE tool_invocations ADD COLUMN checkpoint_id TEXT;
    ALTER TABLE approvals ADD COLUMN checkpoint_id TEXT;
  `,
};
