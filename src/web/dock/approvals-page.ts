/**
 * `/approvals`: the history of approvals as a person reads it — when, which tool and what the
 * call would have done, who asked, the decision, who made it and why, and the checkpoint taken
 * before an approved call ran. Server-rendered, signed-in
 * only (not a public route); the dock's panel decides the pending ones.
 */
import type { WebRoute } from '../app.js';
import { escapeHtml, sendPage } from './html.js';
import type { DockApprovalHistory } from './sources.js';

export const APPROVALS_PATH = '/approvals';
/** Rows the page shows, newest first. */
const HISTORY_ROWS = 500;

const STATUS_WORDS: Record<string, string> = {
  pending: 'waiting',
  approved: 'approved',
  denied: 'denied',
  expired: 'expired (counts as denied)',
  cancelled: 'withdrawn by the caller',
  interrupted: 'ended by a server restart',
};

function when(ms: number | null): string {
  return ms === null ? '' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/** The history page (needs the dock session like every non-public route). */
export function approvalsPageRoute(history: DockApprovalHistory): WebRoute {
  return {
    match: (req, url) => url.pathname === APPROVALS_PATH && (req.method === 'GET' || req.method === 'HEAD'),
    handle: async (_req, res) => {
      const rows = await history(HISTORY_ROWS);
      const body = rows
        .map(
          (r) => `<tr data-approval="${escapeHtml(r.id)}" data-status="${escapeHtml(r.status)}">
<td>${escapeHtml(when(r.requestedAt))}</td>
<td><code>${escapeHtml(r.tool)}</code><br>${escapeHtml(r.summary)}</td>
<td>${escapeHtml(r.askedBy)}</td>
<td class="decision">${escapeHtml(STATUS_WORDS[r.status] ?? r.status)}${r.scope && r.scope !== 'once' ? ` (${escapeHtml(r.scope)})` : ''}</td>
<td>${escapeHtml(r.decidedBy ?? '')}<br>${escapeHtml(when(r.decidedAt))}</td>
<td class="reason">${escapeHtml(r.reason ?? '')}</td>
<td class="checkpoint">${r.checkpointId ? `<code>${escapeHtml(r.checkpointId)}</code>` : ''}</td></tr>`,
        )
        .join('');
      sendPage(
        res,
        200,
        'Approvals',
        `<h1>Approvals</h1>
<p class="note">Every call that waited for a person, newest first: who asked, what the call would do, and who decided. Pending ones are decided in the dock.</p>
${
  rows.length === 0
    ? '<p id="no-approvals">No call has asked for approval yet.</p>'
    : `<table id="approvals"><thead><tr><th>Asked</th><th>Call</th><th>Asked by</th><th>Decision</th><th>Decided by</th><th>Reason</th><th title="Taken just before the approved call ran: restoring it undoes the call">Checkpoint before</th></tr></thead><tbody>${body}</tbody></table>`
}
<p class="note">From a shell: <code>paddock approvals list</code>.</p>
<p><a href="/">Back to the dock</a></p>`,
      );
    },
  };
}
