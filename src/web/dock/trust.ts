/**
 * The dock's side of trust: the review of changed upstream tools (a notice on every page while
 * any is quarantined, a diff, accept or reject), and for shared terminals who typed what, taking
 * control, and the session as an asciicast download. Thin: the integrations service and the
 * terminal service decide; this translates.
 */

import { reviewItems } from '../../integrations/review.js';
import type { IntegrationsService } from '../../integrations/service.js';
import { PaddockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { WebRoute } from '../app.js';
import type { DockConnection } from './actions.js';
import { sendText } from './html.js';
import type { ClientMessage, DockToolChange } from './protocol.js';
import type { Disposable, DockComputer } from './sources.js';

/** The upstream tools awaiting a person's review. */
export interface DockToolReview {
  changes(): DockToolChange[];
  decide(
    server: string,
    decision: 'accept' | 'reject',
    tools: string[] | undefined,
    by: string,
  ): Promise<DockToolChange[]>;
  /** Fires when quarantined tools appear or are decided. */
  onChange(listener: () => void): Disposable;
}

/** The dock's review over the integrations service. */
export function dockToolReviewFromService(integrations: IntegrationsService): DockToolReview {
  return {
    changes: () => reviewItems(integrations.pendingChanges()),
    decide: async (server, decision, tools, by) =>
      reviewItems(await integrations.review(server, decision, by, tools)),
    onChange: (listener) => integrations.onQuarantine(() => listener()),
  };
}

export type TrustMessage = Extract<
  ClientMessage,
  { type: 'tools.decide' | 'tools.review' | 'terminal.hold' | 'terminal.journal' }
>;

export function isTrustMessage(m: ClientMessage): m is TrustMessage {
  return (
    m.type === 'tools.decide' ||
    m.type === 'tools.review' ||
    m.type === 'terminal.hold' ||
    m.type === 'terminal.journal'
  );
}

/** What the trust actions work with. */
export interface TrustDeps {
  computer: DockComputer | null;
  toolReview: DockToolReview | null;
  caller: string;
  logger: Logger;
}

/** Performs one trust request of a page; answers what the reply says. */
export function trustActionOf(deps: TrustDeps) {
  return async (conn: DockConnection, message: TrustMessage): Promise<string> => {
    switch (message.type) {
      case 'tools.review': {
        conn.client.send({ type: 'tools.review', changes: deps.toolReview?.changes() ?? [] });
        return 'Sent.';
      }
      case 'tools.decide': {
        const review = deps.toolReview;
        if (!review) throw new PaddockError('UNSUPPORTED_CAPABILITY', 'This server pins no upstream tools.');
        const decided = await review.decide(message.server, message.decision, message.tools, deps.caller);
        deps.logger.info('dock.tools_reviewed', {
          server: message.server,
          decision: message.decision,
          tools: decided.map((c) => c.tool),
          caller: deps.caller,
        });
        const names = decided.map((c) => c.tool).join(', ') || 'nothing';
        return `${message.decision === 'accept' ? 'Accepted' : 'Rejected'} ${names} of ${message.server}.`;
      }
      case 'terminal.hold': {
        const terminals = terminalsOf(deps.computer);
        if (message.hold) {
          terminals.hold(message.terminalId, deps.caller);
          return `You have control of ${message.terminalId}; the agent's input is refused until you give it back.`;
        }
        terminals.release(message.terminalId, deps.caller);
        return `Gave ${message.terminalId} back; the agent may type again.`;
      }
      case 'terminal.journal': {
        const terminals = terminalsOf(deps.computer);
        conn.client.send({
          type: 'terminal.journal',
          terminalId: message.terminalId,
          source: message.source ?? null,
          entries: terminals.journal(message.terminalId, message.source),
        });
        return 'Sent.';
      }
    }
  };
}

/** The trust side of the watched computer's terminals. */
function terminalsOf(computer: DockComputer | null) {
  const t = computer?.terminals;
  if (!t?.hold || !t.release || !t.journal || !t.asciicast) {
    throw new PaddockError('UNSUPPORTED_CAPABILITY', 'This server shares no terminal journals.');
  }
  return { hold: t.hold, release: t.release, journal: t.journal, asciicast: t.asciicast };
}

const CAST_PATH = /^\/dock\/terminals\/(g\d+\.term\d+)\.cast$/;

/** `GET /dock/terminals/<id>.cast`: the terminal's session as an asciicast v2 download (signed-in only). */
export function castRoute(computer: DockComputer | null): WebRoute {
  return {
    match: (req, url) => req.method === 'GET' && CAST_PATH.test(url.pathname),
    handle: (_req, res, url) => {
      const id = CAST_PATH.exec(url.pathname)?.[1] ?? '';
      let cast: string;
      try {
        cast = terminalsOf(computer).asciicast(id);
      } catch (e) {
        const error = e instanceof PaddockError ? e : new PaddockError('INTERNAL', String(e));
        sendText(res, error.code === 'NOT_FOUND' ? 404 : 409, error.message);
        return;
      }
      res.writeHead(200, {
        'content-type': 'application/x-asciicast; charset=utf-8',
        'content-disposition': `attachment; filename="${id}.cast"`,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      });
      res.end(cast);
    },
  };
}
