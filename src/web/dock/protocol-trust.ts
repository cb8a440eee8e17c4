/**
 * The dock messages of trust: the review of changed upstream tools (quarantined until a
 * person decides), a terminal's journal of who typed what, and taking control of a terminal.
 * Spread into the unions of protocol.ts.
 */
import { z } from 'zod';
import { requestId, terminalId } from './protocol-views.js';

const inputSource = z.enum(['agent', 'person', 'script']);

/** One tool change awaiting review, with the line diff of its definition. */
export const toolChangeSchema = z.object({
  server: z.string(),
  tool: z.string().describe('The name the server lists it under.'),
  kind: z.enum(['added', 'changed', 'removed']),
  fields: z.array(z.string()),
  rejected: z.boolean(),
  pinnedHash: z.string().nullable(),
  liveHash: z.string().nullable(),
  diff: z.array(z.object({ op: z.enum([' ', '-', '+', '…']), text: z.string() })),
});

/** One entry of a terminal's journal. */
export const journalEntrySchema = z.object({
  seq: z.number().int(),
  at: z.number(),
  kind: z.enum(['input', 'resize', 'hold', 'release']),
  source: inputSource.nullable(),
  who: z.string(),
  offset: z.number().int().describe('Output offset when it happened (where its mark goes).'),
  text: z.string().optional(),
  bytes: z.number().int().optional(),
  cols: z.number().int().optional(),
  rows: z.number().int().optional(),
});

/** Server → page. */
export const trustServerMessages = [
  z.object({ type: z.literal('tools.review'), changes: z.array(toolChangeSchema) }),
  z.object({
    type: z.literal('terminal.journal'),
    terminalId,
    source: inputSource.nullable(),
    entries: z.array(journalEntrySchema).describe('Oldest first.'),
  }),
] as const;

/** Page → server. */
export const trustClientMessages = [
  z
    .object({
      type: z.literal('tools.decide'),
      server: z.string().min(1).max(200),
      decision: z.enum(['accept', 'reject']),
      tools: z.array(z.string().min(1).max(200)).max(1000).optional(),
      requestId,
    })
    .strict(),
  z.object({ type: z.literal('tools.review'), requestId }).strict(),
  z
    .object({ type: z.literal('terminal.hold'), terminalId, hold: z.boolean(), requestId })
    .strict()
    .describe('Take control of a terminal (the agent’s input is refused meanwhile), or give it back.'),
  z
    .object({ type: z.literal('terminal.journal'), terminalId, source: inputSource.optional(), requestId })
    .strict(),
] as const;

export type DockToolChange = z.infer<typeof toolChangeSchema>;
export type DockJournalEntry = z.infer<typeof journalEntrySchema>;
