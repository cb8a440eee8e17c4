/** The launch link store: boot specs behind `/launch/<id>`. */
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

/** Launch links; a link created on one server opens on every server sharing the store. */
export interface LaunchLinkStore {
  /** Stores a new link; INVALID_ARGUMENT for a script over MAX_STARTUP_SCRIPT_BYTES. */
  create(profileId: string, startupScript: string): Promise<LaunchLink>;
  /** A link by id; INVALID_ARGUMENT when malformed, NOT_FOUND when unknown. */
  get(id: string): Promise<LaunchLink>;
}

const ID_PATTERN = /^[A-Za-z0-9_-]{8,64}$/;

/** A new link, checked (every implementation builds it here, then stores it). */
export function newLaunchLink(profileId: string, startupScript: string, now = Date.now()): LaunchLink {
  if (Buffer.byteLength(startupScript) > MAX_STARTUP_SCRIPT_BYTES) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'The startup script is larger than 2 MiB; shorten it or have it download the rest.',
    );
  }
  return { id: randomId('', 12), createdAt: now, profileId, startupScript };
}

/** Throws INVALID_ARGUMENT unless `id` has the shape of a launch link id. */
export function checkLaunchLinkId(id: string): void {
  if (!ID_PATTERN.test(id)) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `"${id.slice(0, 80)}" is not a launch link id; copy the id from the /launch/<id> URL.`,
    );
  }
}

/** The error for an unknown link. */
export function launchLinkNotFound(id: string): PaddockError {
  return new PaddockError(
    'NOT_FOUND',
    `No launch link "${id}"; check the URL or create a new link with create_launch_link.`,
  );
}
