/**
 * The CLI's approval requests as they travel over the server's socket: one zod contract,
 * checked on the server, answered from the service (so a decision wakes the waiting call).
 */
import { z } from 'zod';
import { PaddockError } from '../shared/errors.js';
import { MAX_REASON_CHARS } from '../store/approvals.js';
import type { ApprovalService } from './service.js';

const id = z.string().min(1).max(64);

export const approvalRequestSchema = z.discriminatedUnion('action', [
  z
    .object({
      action: z.literal('list'),
      all: z.boolean().optional(),
      limit: z.number().int().min(1).max(1000).optional(),
    })
    .strict(),
  z.object({ action: z.literal('show'), id }).strict(),
  z
    .object({
      action: z.literal('approve'),
      id,
      scope: z.enum(['once', 'session', 'always']).optional(),
      reason: z.string().max(MAX_REASON_CHARS).optional(),
    })
    .strict(),
  z.object({ action: z.literal('deny'), id, reason: z.string().max(MAX_REASON_CHARS).optional() }).strict(),
  z.object({ action: z.literal('rules'), all: z.boolean().optional() }).strict(),
  z.object({ action: z.literal('remove-rule'), id }).strict(),
]);

export type ApprovalRequestMessage = z.infer<typeof approvalRequestSchema>;

/** Answers one request as `by` (the CLI: `cli`). Throws a PaddockError the socket relays. */
export async function answerApprovalRequest(
  service: ApprovalService,
  raw: unknown,
  by: string,
): Promise<Record<string, unknown>> {
  const parsed = approvalRequestSchema.safeParse(raw);
  if (!parsed.success) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `Bad approvals request: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  }
  const request = parsed.data;
  switch (request.action) {
    case 'list':
      return { approvals: await service.list({ pendingOnly: !request.all, limit: request.limit ?? 100 }) };
    case 'show': {
      const approval = await service.view(request.id);
      if (!approval)
        throw new PaddockError(
          'NOT_FOUND',
          `No approval "${request.id}"; see \`paddock approvals list --all\`.`,
        );
      return { approval };
    }
    case 'approve':
      await service.decide(request.id, {
        approve: true,
        by,
        via: 'cli',
        scope: request.scope,
        reason: request.reason,
      });
      return { approval: await service.view(request.id) };
    case 'deny':
      await service.decide(request.id, { approve: false, by, via: 'cli', reason: request.reason });
      return { approval: await service.view(request.id) };
    case 'rules':
      return { rules: await service.rules(request.all ?? false) };
    case 'remove-rule':
      return { rule: await service.removeRule(request.id, by) };
  }
}
