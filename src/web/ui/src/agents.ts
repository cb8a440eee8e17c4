/**
 * The agents tab: agents that did not load (with their problems), each agent with its
 * schedules, next run time and last run, a Run now button with an optional input, and the
 * runs below (see agent-runs.ts).
 */
import type { DockAgent, DockAgentLoadError, DockAgentRun, DockAgentsState } from '../../dock/protocol.js';
import { RunList } from './agent-runs.js';
import { h, replace } from './dom.js';
import './agents.css';
import type { DockSocket } from './socket.js';

interface Card {
  el: HTMLElement;
  body: HTMLElement;
  input: HTMLInputElement;
  button: HTMLButtonElement;
  busy: boolean;
}

export class AgentsPanel {
  readonly el = h('div', { class: 'list agents', 'data-testid': 'agents-panel' });
  readonly runs: RunList;
  private readonly errors = h('div', { class: 'agent-errors', 'data-testid': 'agent-load-errors' });
  private readonly cards = h('div', { class: 'agent-cards' });
  private readonly empty = h(
    'div',
    { class: 'empty small' },
    h('div', { class: 'empty-title' }, 'No agents in this project'),
    h(
      'div',
      { class: 'empty-text' },
      'Add .paddock/agents/<name>/AGENT.md (a name, a description and the task); it is listed here with its schedules.',
    ),
  );
  private readonly byName = new Map<string, Card>();
  private agents: DockAgent[] = [];
  /** Re-renders the relative times ("in 4 min") while the tab is open. */
  private readonly ticker: ReturnType<typeof setInterval>;
  onCount: (running: number, total: number) => void = () => undefined;

  constructor(
    private readonly socket: DockSocket,
    private readonly toast: (text: string, kind?: 'err' | 'ok') => void,
  ) {
    this.runs = new RunList(socket);
    this.el.append(
      this.errors,
      h('div', { class: 'section-label' }, 'Agents'),
      this.empty,
      this.cards,
      h('div', { class: 'section-label' }, 'Runs'),
      this.runs.el,
    );
    this.ticker = setInterval(() => {
      if (!this.el.hidden) this.renderAll();
    }, 15_000);
  }

  reset(state: DockAgentsState): void {
    this.set(state);
    this.runs.reset(state.runs);
  }

  /** Definitions and load errors changed (the runs list follows `agent.run` messages). */
  set(state: DockAgentsState): void {
    this.agents = state.agents;
    this.renderErrors(state.loadErrors);
    const names = new Set(state.agents.map((a) => a.name));
    for (const [name, card] of this.byName) {
      if (names.has(name)) continue;
      card.el.remove();
      this.byName.delete(name);
    }
    this.renderAll();
    for (const run of [...state.runs].reverse()) this.runs.upsert(run);
  }

  upsertRun(run: DockAgentRun): void {
    this.runs.upsert(run);
  }

  dispose(): void {
    clearInterval(this.ticker);
  }

  private renderAll(): void {
    for (const agent of this.agents) {
      let card = this.byName.get(agent.name);
      if (!card) {
        card = this.create(agent.name);
        this.byName.set(agent.name, card);
      }
      this.cards.append(card.el);
      this.render(card, agent);
    }
    this.empty.hidden = this.agents.length > 0;
    this.onCount(this.agents.filter((a) => a.running).length, this.agents.length);
  }

  private renderErrors(errors: DockAgentLoadError[]): void {
    replace(
      this.errors,
      ...errors.map((e) =>
        h(
          'div',
          { class: 'agent-error', role: 'alert', 'data-agent': e.agent },
          h('div', { class: 'agent-error-title' }, h('b', {}, e.agent), ' did not load'),
          h('div', { class: 'ids mono' }, e.file),
          h('ul', { class: 'mono' }, ...e.problems.map((p) => h('li', {}, p))),
        ),
      ),
    );
  }

  private create(name: string): Card {
    const input = h('input', {
      class: 'path',
      type: 'text',
      placeholder: 'Input for this run (optional)',
      'aria-label': `Input for ${name}`,
      maxlength: 16_384,
      'data-testid': 'agent-input',
    });
    const button = h(
      'button',
      { class: 'primary small', type: 'button', 'data-testid': 'agent-run-now' },
      'Run now',
    );
    const body = h('div', { class: 'agent-body' });
    const el = h(
      'div',
      { class: 'agent-card', 'data-agent': name },
      body,
      h('div', { class: 'agent-run' }, input, button),
    );
    const card: Card = { el, body, input, button, busy: false };
    button.addEventListener('click', () => void this.runNow(name, card));
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') void this.runNow(name, card);
    });
    return card;
  }

  private async runNow(name: string, card: Card): Promise<void> {
    if (card.busy || card.button.disabled) return;
    card.busy = true;
    card.button.disabled = true;
    const input = card.input.value.trim();
    const reply = await this.socket.request({
      type: 'agent.run',
      name,
      ...(input ? { input } : {}),
    });
    card.busy = false;
    const agent = this.agents.find((a) => a.name === name);
    card.button.disabled = agent?.running != null;
    if (!reply.ok) {
      this.toast(reply.message, 'err');
      return;
    }
    card.input.value = '';
    this.toast(reply.message);
  }

  private render(card: Card, agent: DockAgent): void {
    const now = Date.now();
    const last = agent.lastRun;
    const status = agent.running
      ? h('span', { class: 'state running' }, h('span', { class: 'spinner' }), 'running')
      : last
        ? h(
            'span',
            { class: `state ${last.status}`, title: `last run ${last.id}` },
            `last run ${last.status} · ${since(now - (last.endedAt ?? last.startedAt))}`,
          )
        : h('span', { class: 'state' }, 'never run');
    replace(
      card.body,
      h(
        'div',
        { class: 'agent-head' },
        h('span', { class: 'agent-name mono' }, agent.name),
        h('span', { class: 'chip' }, `${agent.provider} / ${agent.model}`),
        h('span', { class: 'spacer' }),
        status,
      ),
      h('div', { class: 'agent-desc' }, agent.description),
      agent.schedules.length === 0
        ? h('div', { class: 'agent-sched muted' }, 'No schedule: runs when started.')
        : h(
            'div',
            { class: 'agent-scheds' },
            ...agent.schedules.map((s) =>
              h(
                'div',
                { class: 'agent-sched', 'data-testid': 'agent-schedule' },
                h('code', {}, s.cron),
                s.timezone ? h('span', { class: 'muted' }, s.timezone) : null,
                h(
                  'span',
                  {
                    class: 'next',
                    'data-testid': 'agent-next',
                    title: s.next ? new Date(s.next).toString() : '',
                  },
                  s.next === null
                    ? 'never fires again'
                    : `next ${when(s.next, now)} · in ${ago(s.next - now)}`,
                ),
              ),
            ),
          ),
      agent.warnings.length > 0
        ? h('div', { class: 'agent-warn' }, ...agent.warnings.map((w) => h('div', {}, w)))
        : null,
    );
    if (!card.busy) card.button.disabled = agent.running !== null;
    card.button.title = agent.running ? `Running now (${agent.running}).` : `Start ${agent.name} now.`;
  }
}

/** `14:05` today, `Tue 09:00` within a week, `2025-03-04 09:00` beyond. */
function when(epochMs: number, now: number): string {
  const d = new Date(epochMs);
  const hm = `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
  const today = new Date(now);
  if (d.toDateString() === today.toDateString()) return hm;
  if (epochMs - now < 6 * 86_400_000) return `${d.toLocaleDateString('en', { weekday: 'short' })} ${hm}`;
  const ymd = [d.getFullYear(), d.getMonth() + 1, d.getDate()].map((n) => String(n).padStart(2, '0'));
  return `${ymd.join('-')} ${hm}`;
}

/** `just now`, `4 min ago`. */
function since(ms: number): string {
  return ms < 5000 ? 'just now' : `${ago(ms)} ago`;
}

/** A rough span: `12 s`, `4 min`, `3 h 5 min`, `2 d`. */
function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return m % 60 ? `${hours} h ${m % 60} min` : `${hours} h`;
  return `${Math.round(hours / 24)} d`;
}
