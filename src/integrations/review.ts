/** `paddock servers review <server>`: the pending tool changes of a server, and the decision on them. */
import { type DiffLine, definitionDiff, diffText } from './definition-diff.js';
import type { ReviewDecision } from './pin-guard.js';
import type { IntegrationsService } from './service.js';
import type { ToolChange } from './tool-pins.js';

/** One change as a review shows it: the change and the line diff of its definitions. */
export interface ReviewItem extends Omit<ToolChange, 'pinnedDefinition' | 'liveDefinition'> {
  diff: DiffLine[];
}

/** Data for `--json` plus the text a person reads. */
export interface RenderedReview {
  data: { server: string; changes: ReviewItem[]; decided?: ReviewDecision };
  text: string;
}

/** The review of `server`'s pending changes, each with the diff of its definition. */
export function reviewItems(changes: readonly ToolChange[]): ReviewItem[] {
  return changes.map(({ pinnedDefinition, liveDefinition, ...rest }) => ({
    ...rest,
    diff: definitionDiff(pinnedDefinition, liveDefinition),
  }));
}

/** Shows what changed on `server` since its tools were pinned (nothing is decided). */
export function serverReview(service: IntegrationsService, server: string): RenderedReview {
  const changes = reviewItems(service.pendingChanges(server));
  if (changes.length === 0) {
    return {
      data: { server, changes },
      text: `MCP server "${server}" lists its tools exactly as pinned; nothing to review.`,
    };
  }
  const parts = changes.map((c) => {
    const head = `${c.kind.toUpperCase()} ${c.tool}${c.fields.length ? ` (${c.fields.join(', ')})` : ''}${c.rejected ? ' — rejected before' : ''}`;
    const hashes = `pinned ${c.pinnedHash ?? '(none)'}\nlisted ${c.liveHash ?? '(none)'}`;
    return `${head}\n${hashes}\n${diffText(c.diff)}`;
  });
  const held = changes.filter((c) => c.kind !== 'removed').length;
  return {
    data: { server, changes },
    text:
      `${parts.join('\n\n')}\n\n${held} tool${held === 1 ? ' is' : 's are'} quarantined. ` +
      `Accept with \`paddock servers review ${server} --accept\`, or refuse with --reject ` +
      '(add --tool NAME to decide one tool).',
  };
}

/** Accepts or rejects the pending changes of `server` (all, or `tools`) as `decidedBy`. */
export async function decideReview(
  service: IntegrationsService,
  server: string,
  decision: ReviewDecision,
  decidedBy: string,
  tools?: readonly string[],
): Promise<RenderedReview> {
  const decided = reviewItems(await service.review(server, decision, decidedBy, tools));
  const verb = decision === 'accept' ? 'Accepted' : 'Rejected';
  const text =
    decided.length === 0
      ? `MCP server "${server}" has no pending change to ${decision}.`
      : `${verb} ${decided.map((c) => `${c.kind} ${c.tool}`).join(', ')}.` +
        (decision === 'reject' ? ' The rejected tools stay quarantined.' : '');
  return { data: { server, changes: decided, decided: decision }, text };
}
