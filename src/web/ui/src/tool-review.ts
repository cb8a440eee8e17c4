/**
 * The review of changed upstream tools: while any tool is quarantined (its definition changed,
 * or it is new, since the person trusted its server) a notice shows at the top of the page; the
 * panel shows each change with the diff of its definition, and accepts or rejects it.
 */
import type { DockToolChange } from '../../dock/protocol.js';
import './trust.css';
import { h, replace } from './dom.js';
import type { DockSocket } from './socket.js';

export class ToolReviewPanel {
  /** The notice at the top of the page; hidden while nothing waits. */
  readonly notice = h('div', {
    class: 'tool-notice',
    role: 'alert',
    hidden: true,
    'data-testid': 'tool-notice',
  });
  readonly el: HTMLElement;
  private readonly list = h('div', { class: 'tool-review-list' });

  constructor(
    private readonly socket: DockSocket,
    private readonly toast: (text: string, kind?: 'err' | 'ok') => void,
  ) {
    this.el = h(
      'section',
      { class: 'panel tool-review', id: 'tool-review', 'aria-label': 'Changed tools', hidden: true },
      h('div', { class: 'panel-head' }, h('span', { class: 'panel-title' }, 'Changed upstream tools')),
      h(
        'p',
        { class: 'tool-review-help' },
        'These tools changed since you trusted their server. Until you accept a change the tool is hidden from every caller and refused (TOOL_QUARANTINED); rejecting keeps it so.',
      ),
      this.list,
    );
  }

  set(changes: DockToolChange[]): void {
    const held = changes.filter((c) => c.kind !== 'removed');
    this.el.hidden = changes.length === 0;
    this.notice.hidden = held.length === 0;
    if (held.length > 0) {
      const servers = [...new Set(held.map((c) => c.server))].join(', ');
      const open = h('a', { href: '#tool-review' }, 'Review');
      open.addEventListener('click', (e) => {
        e.preventDefault();
        this.el.scrollIntoView({ block: 'start' });
      });
      replace(
        this.notice,
        `${held.length} upstream tool${held.length === 1 ? '' : 's'} of ${servers} changed and ${held.length === 1 ? 'is' : 'are'} quarantined. `,
        open,
      );
    }
    const byServer = new Map<string, DockToolChange[]>();
    for (const c of changes) byServer.set(c.server, [...(byServer.get(c.server) ?? []), c]);
    replace(
      this.list,
      ...[...byServer].map(([server, list]) =>
        h(
          'div',
          { class: 'tool-review-server', 'data-server': server },
          h(
            'div',
            { class: 'tool-review-server-head' },
            h('strong', {}, server),
            this.button('Accept all', server, 'accept'),
            this.button('Reject all', server, 'reject'),
          ),
          ...list.map((c) => this.card(c)),
        ),
      ),
    );
  }

  private card(c: DockToolChange): HTMLElement {
    const what =
      c.kind === 'added'
        ? 'new tool'
        : c.kind === 'removed'
          ? 'no longer listed'
          : `changed ${c.fields.join(', ')}`;
    return h(
      'div',
      { class: `tool-change ${c.kind}`, 'data-tool': c.tool, 'data-testid': 'tool-change' },
      h(
        'div',
        { class: 'tool-change-head' },
        h('code', {}, c.tool),
        h('span', { class: 'tool-change-kind' }, what),
        c.rejected ? h('span', { class: 'tool-change-rejected' }, 'rejected before') : null,
        this.button('Accept', c.server, 'accept', c.tool),
        c.kind === 'removed' ? null : this.button('Reject', c.server, 'reject', c.tool),
      ),
      h(
        'pre',
        { class: 'tool-diff' },
        ...c.diff.map((l) =>
          h(
            'span',
            { class: l.op === '+' ? 'add' : l.op === '-' ? 'del' : l.op === '…' ? 'skip' : 'same' },
            `${l.op === '…' ? '…' : l.op} ${l.text}\n`,
          ),
        ),
      ),
    );
  }

  private button(label: string, server: string, decision: 'accept' | 'reject', tool?: string): HTMLElement {
    const b = h('button', { type: 'button', class: decision === 'accept' ? 'primary' : 'danger' }, label);
    b.addEventListener('click', async () => {
      b.setAttribute('disabled', '');
      const reply = await this.socket.request({
        type: 'tools.decide',
        server,
        decision,
        ...(tool ? { tools: [tool] } : {}),
      });
      b.removeAttribute('disabled');
      this.toast(reply.message, reply.ok ? 'ok' : 'err');
    });
    return b;
  }
}
