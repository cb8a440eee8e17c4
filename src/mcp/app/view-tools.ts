/**
 * The tools only the computer view calls (MCP Apps visibility `["app"]`): listed only to
 * clients that declared the extension, hidden by their host from the model, and audited
 * `via: app`. Each goes through the gateway like any call: permission rules, validation, the
 * audit row. What they may do is no more than the view's own caller may: the view acts on the
 * caller's computer, shows and decides only the approvals of the caller's own calls, and a
 * decision goes through the approval service's deciders rules — a third party's view is shown
 * its waiting calls but never decides them.
 */
import { generationOfId } from '../../computer/ids.js';
import { annotationsFor, inputObject, structured } from '../../computer/tools/common.js';
import { PaddockError } from '../../shared/errors.js';
import { declareTool } from '../../tools/define.js';
import { s } from '../../tools/schema.js';
import type { Tool } from '../../tools/tool.js';
import { previewSnapshot } from './preview-snapshot.js';
import { readViewState, untilChange, type ViewDeps } from './view-state.js';

export type { ViewApprovals, ViewDeps } from './view-state.js';

/** Longest wait of one view_watch_computer. */
export const VIEW_WATCH_MAX_WAIT_MS = 20_000;
/** Longest input of one view_type_in_terminal (keystrokes or a paste). */
export const VIEW_INPUT_MAX_CHARS = 4096;

const DESCRIBED_FOR_VIEW = ' Called by the computer view in the chat, never by a model.';

const cursor = (what: string) =>
  s.string({ description: `The nextCursor of the view's previous read of ${what}.`, maxLength: 200 });

/** The tools of the computer view. */
export function createViewTools(deps: ViewDeps): Tool[] {
  return [
    declareTool({
      name: 'view_watch_computer',
      description:
        "Reads what the computer view shows: the computer's state, its terminals and the new output of the active one, the new output of the job the view follows, the preview and the approvals waiting for this caller's calls. With waitMs it answers as soon as something changed." +
        DESCRIBED_FOR_VIEW,
      annotations: annotationsFor('answer', 'Watch the computer'),
      source: 'computer',
      toolsets: ['computer'],
      appOnly: true,
      input: inputObject(
        {
          terminalId: s.string({ description: 'The terminal the view shows.', maxLength: 160 }),
          terminalCursor: cursor('that terminal'),
          jobId: s.string({ description: 'The job the view follows, e.g. "g2.job5".', maxLength: 160 }),
          jobCursor: cursor('that job'),
          version: s.string({ description: 'The version of the last answer the view shows.', maxLength: 64 }),
          waitMs: s.integer({
            description: 'How long to wait for a change before answering; default 0.',
            minimum: 0,
            maximum: VIEW_WATCH_MAX_WAIT_MS,
          }),
        },
        [],
      ),
      async execute(input, ctx) {
        const manager = deps.computers.for(ctx.caller);
        let read = await readViewState(deps, manager, ctx.caller, input);
        if (!read.fresh && (input.waitMs ?? 0) > 0) {
          await untilChange(deps, manager, ctx.caller.caller, input, input.waitMs ?? 0, ctx.signal);
          read = await readViewState(deps, manager, ctx.caller, input);
        }
        const generation = manager.computer?.generation;
        if (generation !== undefined) ctx.noteComputer({ generation });
        return structured(read.state);
      },
    }),
    declareTool({
      name: 'view_type_in_terminal',
      description:
        "Types what the person pressed in the view's terminal into that terminal, recorded in its journal as the person's input (a third party's view types as that client, and a person's hold in the dock refuses it)." +
        DESCRIBED_FOR_VIEW,
      annotations: annotationsFor('transact', 'Type in the terminal'),
      source: 'computer',
      toolsets: ['computer'],
      appOnly: true,
      input: inputObject(
        {
          terminalId: s.string({ description: 'The terminal shown in the view.', maxLength: 160 }),
          data: s.string({
            description: 'The keystrokes as the terminal sends them (text, Enter as \\r, escape sequences).',
            maxLength: VIEW_INPUT_MAX_CHARS,
          }),
        },
        ['terminalId', 'data'],
      ),
      async execute(input, ctx) {
        const manager = deps.computers.for(ctx.caller);
        if (input.data.length === 0)
          throw new PaddockError('INVALID_ARGUMENT', 'Nothing to type: data is empty; send the keystrokes.');
        // the owner's view is the owner at the keyboard; a client's view types as that client
        const source = ctx.caller.principal.kind === 'owner' ? 'person' : 'agent';
        await manager.terminals.write(input.terminalId, input.data, {
          source,
          who: `${ctx.caller.caller} (chat view)`,
        });
        const generation = generationOfId(input.terminalId);
        if (generation !== undefined) ctx.noteComputer({ generation });
        return structured({
          terminalId: input.terminalId,
          delivered: true,
          bytes: Buffer.byteLength(input.data),
        });
      },
    }),
    declareTool({
      name: 'view_open_terminal',
      description:
        'Opens a terminal in the running computer and makes it the active one, for a view that has none to show.' +
        DESCRIBED_FOR_VIEW,
      annotations: annotationsFor('act', 'Open a terminal'),
      source: 'computer',
      toolsets: ['computer'],
      appOnly: true,
      input: inputObject({}, []),
      async execute(_input, ctx) {
        const manager = deps.computers.for(ctx.caller);
        const info = await manager.terminals.create({ activate: true, signal: ctx.signal });
        const generation = generationOfId(info.id);
        if (generation !== undefined) ctx.noteComputer({ generation });
        return structured({ terminalId: info.id, ...info });
      },
    }),
    declareTool({
      name: 'view_decide_approval',
      description:
        "Approves or denies a call of this caller that waits for a person, from the view's approval card. It is decided as the calling client's own person (approvals.deciders `elicitation`): a third party's calls are never decided here." +
        DESCRIBED_FOR_VIEW,
      annotations: annotationsFor('act', 'Decide an approval'),
      source: 'computer',
      toolsets: ['computer'],
      appOnly: true,
      input: inputObject(
        {
          approvalId: s.string({ description: 'The approval on the card.', maxLength: 64 }),
          decision: s.enum(['approve', 'deny'] as const, { description: 'What the person pressed.' }),
          reason: s.string({ description: 'Told to the caller with a denial.', maxLength: 1000 }),
        },
        ['approvalId', 'decision'],
      ),
      async execute(input, ctx) {
        const approval = await deps.approvals.view(input.approvalId);
        // another caller's approval is unknown here, in the same words as one that does not exist
        if (!approval || approval.caller !== ctx.caller.caller)
          throw new PaddockError(
            'NOT_FOUND',
            `No approval "${input.approvalId}" waits for a call of this conversation; the view lists the ones that do.`,
            { id: input.approvalId },
          );
        const approve = input.decision === 'approve';
        await deps.approvals.decide(input.approvalId, {
          approve,
          by: ctx.caller.caller,
          via: 'elicitation',
          reason: input.reason ?? (approve ? undefined : 'denied in the chat view'),
        });
        return structured({ approvalId: input.approvalId, decision: input.decision, tool: approval.tool });
      },
    }),
    declareTool({
      name: 'view_fetch_preview',
      description:
        "Fetches the page the preview shows (or the given path and port) through the computer's preview relay, so the view can show it without any network access of its own." +
        DESCRIBED_FOR_VIEW,
      annotations: annotationsFor('answer', 'Fetch the preview'),
      source: 'computer',
      toolsets: ['computer'],
      appOnly: true,
      input: inputObject(
        {
          path: s.string({
            description: 'Path on the preview server; default the one shown.',
            maxLength: 4096,
          }),
          port: s.integer({
            description: 'Port inside the computer; default the one shown.',
            minimum: 1,
            maximum: 65535,
          }),
        },
        [],
      ),
      async execute(input, ctx) {
        const manager = deps.computers.for(ctx.caller);
        const state = manager.preview.state();
        const port = input.port ?? state.port;
        if (port === null)
          throw new PaddockError('NOT_RUNNING', 'No computer is running; launch one with launch_computer.');
        const snapshot = await previewSnapshot(manager, input.path ?? state.path ?? '/', port, ctx.signal);
        const generation = manager.computer?.generation;
        if (generation !== undefined) ctx.noteComputer({ generation });
        return structured(snapshot);
      },
    }),
  ];
}
