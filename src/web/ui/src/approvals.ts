/**
 * The approvals panel: every call that waits for a person, pushed over /dock/ws. Each shows
 * the tool, its description and the full arguments (long values folded, never cut without
 * saying so), with approve once, approve for this session (or always, for an agent) and deny
 * with a reason. A badge counts what waits; the standing "always allow" rules can be removed.
 */
import type { DockApproval, DockApprovalRule, DockApprovalsState } from '../../dock/protocol.js';
import './approvals.css';
import { clock, h, replace } from './dom.js';
import type { DockSocket } from './socket.js';

/** Values longer than this are folded behind their first characters. */
const FOLD_CHARS = 160;

export class ApprovalsPanel {
  readonly el: HTMLElement;
  /** The count of waiting calls, for the top bar. */
  readonly badge = h('a', {
    class: 'approvals-badge',
    href: '#approvals',
    hidden: true,
    'data-testid': 'approvals-badge',
    title: 'Calls waiting for your approval',
  });
  private readonly list = h('div', { class: 'approval-list' });
  private readonly rules = h('div', { class: 'approval-rules' });
  /** Reasons typed but not yet sent survive re-renders. */
  private readonly reasons = new Map<string, string>();
  private available = false;

  constructor(
    private readonly socket: DockSocket,
    private readonly toast: (text: string, kind?: 'err' | 'ok') => void,
  ) {
    this.el = h(
      'section',
      { class: 'panel approvals', id: 'approvals', 'aria-label': 'Approvals', hidden: true },
      h('div', { class: 'panel-head' }, h('span', { class: 'panel-title' }, 'Waiting for your approval')),
      this.list,
      this.rules,
    );
    this.badge.addEventListener('click', (e) => {
      e.preventDefault();
      this.el.scrollIntoView({ block: 'start' });
    });
  }

  /** Null: the server keeps no approvals (the panel stays hidden). */
  set(state: DockApprovalsState | null): void {
    this.available = state !== null;
    const pending = state?.pending ?? [];
    const rules = state?.rules ?? [];
    for (const id of [...this.reasons.keys()]) if (!pending.some((a) => a.id === id)) this.reasons.delete(id);
    replace(this.list, ...pending.map((a) => this.card(a)));
    replace(
      this.rules,
      rules.length === 0
        ? null
        : h(
            'details',
            { class: 'rules', 'data-testid': 'approval-rules' },
            h('summary', {}, `Always-allow rules (${rules.length})`),
            ...rules.map((r) => this.rule(r)),
          ),
    );
    this.el.hidden = !this.available || (pending.length === 0 && rules.length === 0);
    this.badge.hidden = pending.length === 0;
    this.badge.textContent = `${pending.length} waiting`;
    const base = document.title.replace(/^\(\d+\) /, '');
    document.title = pending.length > 0 ? `(${pending.length}) ${base}` : base;
  }

  /** Scrolls to the panel when the page was opened from an approval link (`#approvals/<id>`). */
  reveal(): void {
    if (!location.hash.startsWith('#approvals')) return;
    const id = location.hash.split('/')[1];
    const card = id ? this.list.querySelector(`[data-approval-id="${CSS.escape(id)}"]`) : null;
    (card ?? this.el).scrollIntoView({ block: 'start' });
  }

  private card(a: DockApproval): HTMLElement {
    const reason = h('input', {
      class: 'reason',
      type: 'text',
      maxlength: 2000,
      placeholder: 'Reason (told to the caller when you deny)',
      'aria-label': 'Reason',
      'data-testid': 'approval-reason',
      value: this.reasons.get(a.id) ?? '',
    });
    reason.addEventListener('input', () => this.reasons.set(a.id, reason.value));
    const decide = (approve: boolean, scope?: 'once' | 'session' | 'always') => {
      for (const b of buttons) b.disabled = true;
      const text = reason.value.trim();
      void this.socket
        .request({
          type: 'approval.decide',
          id: a.id,
          approve,
          ...(scope ? { scope } : {}),
          ...(text ? { reason: text } : {}),
        })
        .then((reply) => {
          if (!reply.ok) {
            for (const b of buttons) b.disabled = false;
            this.toast(reply.message, 'err');
          } else this.toast(reply.message);
        });
    };
    const button = (label: string, testid: string, cls: string, fn: () => void) => {
      const b = h('button', { type: 'button', class: cls, 'data-testid': testid }, label);
      b.addEventListener('click', fn);
      return b;
    };
    const deny = button('Deny', 'deny', 'primary danger', () => decide(false));
    // a computer's connection waiting for a host to be allowed (policy.http.ask)
    const egress = a.source === 'egress';
    const buttons = egress
      ? [
          button('Allow once', 'approve-once', 'primary', () => decide(true, 'once')),
          button('Allow for this computer', 'approve-session', 'ghost', () => decide(true, 'session')),
          button('Always allow', 'approve-always', 'ghost', () => decide(true, 'always')),
          deny,
        ]
      : [
          button('Approve once', 'approve-once', 'primary', () => decide(true, 'once')),
          button(
            a.agent ? 'Approve for this run' : 'Approve for this session',
            'approve-session',
            'ghost',
            () => decide(true, 'session'),
          ),
          ...(a.agent
            ? [button(`Always allow for ${a.agent}`, 'approve-always', 'ghost', () => decide(true, 'always'))]
            : []),
          deny,
        ];
    const who = egress
      ? `connection of ${a.callerLabel ?? a.caller}`
      : a.agent
        ? `agent ${a.agent} (run ${a.runId ?? '?'})`
        : (a.callerLabel ?? a.caller);
    return h(
      'article',
      { class: 'approval', 'data-testid': 'approval', 'data-approval-id': a.id },
      h(
        'div',
        { class: 'approval-head' },
        h('span', { class: 'tool mono', 'data-testid': 'approval-tool' }, a.tool),
        h('span', { class: 'muted', title: a.caller, 'data-testid': 'approval-who' }, `asked by ${who}`),
        h(
          'span',
          { class: 'muted mono', title: new Date(a.expiresAt).toISOString() },
          `expires ${clock(a.expiresAt)}`,
        ),
      ),
      a.summary
        ? h('p', { class: 'approval-summary', 'data-testid': 'approval-summary' }, `${a.tool} ${a.summary}`)
        : null,
      verdictLine(a),
      a.description ? description(a.description) : null,
      argumentsView(a),
      h('div', { class: 'approval-actions' }, ...buttons.filter((b) => b !== deny), reason, deny),
    );
  }

  private rule(r: DockApprovalRule): HTMLElement {
    const remove = h('button', { type: 'button', class: 'ghost', 'data-testid': 'remove-rule' }, 'Remove');
    remove.addEventListener('click', () => {
      remove.disabled = true;
      void this.socket.request({ type: 'approval.rule.remove', ruleId: r.id }).then((reply) => {
        this.toast(reply.message, reply.ok ? 'ok' : 'err');
        if (!reply.ok) remove.disabled = false;
      });
    });
    return h(
      'div',
      { class: 'rule' },
      h('span', { class: 'mono' }, r.tool),
      h(
        'span',
        { class: 'muted' },
        r.tool.startsWith('egress:')
          ? `always allowed for every computer by ${r.createdBy}`
          : `always allowed for ${r.agent} by ${r.createdBy}`,
      ),
      remove,
    );
  }
}

/** What the policy said of the call before anyone was asked (a denied call never gets here). */
function verdictLine(a: DockApproval): HTMLElement {
  const v = a.verdict;
  const text = v
    ? `Policy: allowed by ${v.rule}. Your approval is the second check.`
    : 'Policy: no rule checks this tool’s arguments first; your approval is the only check.';
  return h(
    'p',
    { class: `approval-verdict ${v ? 'allowed' : 'none'}`, 'data-testid': 'approval-verdict' },
    text,
  );
}

function description(text: string): HTMLElement {
  const [first, ...rest] = text.trim().split(/\n\s*\n/);
  if (rest.length === 0) return h('p', { class: 'approval-about' }, first ?? '');
  return h(
    'details',
    { class: 'approval-about' },
    h('summary', {}, first ?? ''),
    h('p', {}, rest.join('\n\n')),
  );
}

/** The arguments, one row per top-level key; long values fold, and a cut is always announced. */
function argumentsView(a: DockApproval): HTMLElement {
  const box = h('div', { class: 'approval-args', 'data-testid': 'approval-args' });
  if (a.argumentsTruncated) {
    box.append(
      h(
        'p',
        { class: 'warn' },
        `The arguments are ${a.argumentsChars.toLocaleString()} characters; the first ${a.arguments.length.toLocaleString()} are shown. Read them all with: paddock approvals show ${a.id}`,
      ),
      h('pre', { class: 'mono' }, a.arguments),
    );
    return box;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(a.arguments);
  } catch {
    parsed = a.arguments;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    box.append(value('', parsed));
    return box;
  }
  const entries = Object.entries(parsed as Record<string, unknown>);
  if (entries.length === 0) box.append(h('p', { class: 'muted' }, 'No arguments.'));
  for (const [key, v] of entries) box.append(value(key, v));
  return box;
}

function value(key: string, v: unknown): HTMLElement {
  const compact = typeof v === 'string' ? v : JSON.stringify(v);
  const text = typeof v === 'string' || compact.length <= FOLD_CHARS ? compact : JSON.stringify(v, null, 2);
  const label = key ? h('span', { class: 'arg-key mono' }, key) : null;
  if (text.length <= FOLD_CHARS && !text.includes('\n')) {
    return h(
      'div',
      { class: 'arg' },
      label,
      h('code', { class: 'arg-value mono', 'data-testid': 'arg-value' }, text),
    );
  }
  return h(
    'details',
    { class: 'arg folded' },
    h(
      'summary',
      {},
      label,
      h(
        'code',
        { class: 'mono muted' },
        `${text.slice(0, 60).replace(/\s+/g, ' ')}… (${text.length.toLocaleString()} characters)`,
      ),
    ),
    h('pre', { class: 'arg-value mono', 'data-testid': 'arg-value' }, text),
  );
}
