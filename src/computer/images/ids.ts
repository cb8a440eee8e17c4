/**
 * The accounts of a computer that runs on an image.
 *
 * An image's files belong to its own accounts (root, `_apt`, `www-data`, …). They are stored on
 * the host shifted into a range of host ids that no one else uses, and a computer on the image
 * maps that range back, so inside it `/usr` belongs to root and `apt` finds `_apt`, while on the
 * host every one of those ids is unprivileged and owns nothing outside the image store — the
 * scheme of rootless Podman's sub-ids. Two ids are special:
 *
 * - the guest account (uid 1000 inside) is the jobs' host uid of today's computers, so a
 *   workspace disk and staged files serve host-directory and image computers alike;
 * - the guest agent is uid 65536 inside (outside the image's range), mapped to the sandbox uid,
 *   so no account of the image — root included — is the agent's.
 */
import { GUEST_UID } from '../link/guest-layout.js';

/** First host id of the image range (image uid `u` is host `IMAGE_ID_BASE + u`, save the guest). */
export const IMAGE_ID_BASE = 640_000_000;
/** Ids an image may use: 0 … 65535. */
export const IMAGE_ID_COUNT = 65_536;
/** The guest agent's uid (and gid) inside a computer on an image. */
export const IMAGE_AGENT_ID = 65_536;

/** Host ids of a computer's two accounts (see backend/id-map.ts). */
export interface ImageIdBase {
  /** Host uid of the guest agent. */
  agentHostId: number;
  /** Host uid of the guest account (uid 1000 inside). */
  jobHostId: number;
}

/** The host id an image id is stored as; ids outside 0 … 65535 become the image's `nobody`. */
export function hostIdOf(id: number, ids: ImageIdBase): number {
  if (id === GUEST_UID) return ids.jobHostId;
  if (!Number.isInteger(id) || id < 0 || id >= IMAGE_ID_COUNT) return IMAGE_ID_BASE + 65_534;
  return IMAGE_ID_BASE + id;
}

/** The uid_map / gid_map text of a computer on an image. */
export function imageIdMapText(ids: ImageIdBase): string {
  return [
    `0 ${IMAGE_ID_BASE} ${GUEST_UID}`,
    `${GUEST_UID} ${ids.jobHostId} 1`,
    `${GUEST_UID + 1} ${IMAGE_ID_BASE + GUEST_UID + 1} ${IMAGE_ID_COUNT - GUEST_UID - 1}`,
    `${IMAGE_AGENT_ID} ${ids.agentHostId} 1`,
    '',
  ].join('\n');
}

/** Whether the sandbox's own host ids fall inside the image range (then images cannot be used). */
export function collidesWithImageIds(ids: ImageIdBase): boolean {
  const inRange = (id: number) => id >= IMAGE_ID_BASE && id < IMAGE_ID_BASE + IMAGE_ID_COUNT;
  return inRange(ids.agentHostId) || inRange(ids.jobHostId);
}
