/**
 * Terminal tabs: one xterm.js per terminal of the computer. The visible tab follows the
 * active terminal (the agent's switch_terminal included); the person's keystrokes go to the
 * PTY; the size follows the panel through the fit addon.
 */
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import type { DockFeatures, DockStatus, DockTerminal } from '../../dock/protocol.js';
import { h, replace } from './dom.js';
import type { DockSocket } from './socket.js';
import { TerminalTrust } from './terminal-trust.js';

const MAX_INPUT_CHARS = 65_536;

const THEME = {
  background: '#0b0f14',
  foreground: '#d7e0ea',
  cursor: '#3fb68b',
  cursorAccent: '#0b0f14',
  selectionBackground: '#264f78',
  black: '#1b2330',
  brightBlack: '#5c6b7e',
  red: '#f47067',
  brightRed: '#ff938a',
  green: '#57ab5a',
  brightGreen: '#6bc46d',
  yellow: '#c69026',
  brightYellow: '#daaa3f',
  blue: '#539bf5',
  brightBlue: '#6cb6ff',
  magenta: '#b083f0',
  brightMagenta: '#dcbdfb',
  cyan: '#39c5cf',
  brightCyan: '#56d4dd',
  white: '#c5d1de',
  brightWhite: '#f0f6fc',
};

interface View {
  info: DockTerminal;
  term: Terminal;
  fit: FitAddon;
  el: HTMLElement;
  tab: HTMLButtonElement;
  cursor: string | undefined;
  attached: boolean;
  /** An attach was sent on this connection and its replay has not started yet. */
  pending: boolean;
  size: string;
}

export class TerminalPanel {
  readonly el: HTMLElement;
  private readonly tabs = h('div', { class: 'tabs', role: 'tablist', 'data-testid': 'terminal-tabs' });
  private readonly body = h('div', { class: 'terminal-body' });
  private readonly empty = h('div', { class: 'empty', 'data-testid': 'terminal-empty' });
  private readonly views = new Map<string, View>();
  private visible: string | null = null;
  private serverActive: string | null = null;
  private features: DockFeatures = { computer: false, terminals: false, preview: false };
  private lifecycle: DockStatus['lifecycle'] = 'none';
  private resizeTimer: number | undefined;
  /** A terminal to reveal as soon as it is listed (the startup script of a launch link). */
  private pendingReveal: string | null = null;

  /** Who typed what, taking control, export. */
  readonly trust: TerminalTrust;

  constructor(
    private readonly socket: DockSocket,
    toast: (text: string, kind?: 'err' | 'ok') => void = () => undefined,
  ) {
    this.trust = new TerminalTrust(socket, toast);
    this.el = h(
      'section',
      { class: 'panel terminals', 'aria-label': 'Terminals' },
      h(
        'div',
        { class: 'panel-head' },
        h('span', { class: 'panel-title' }, 'Terminal'),
        this.tabs,
        this.trust.bar,
      ),
      this.body,
      this.trust.journalEl,
    );
    this.body.append(this.empty);
    new ResizeObserver(() => {
      window.clearTimeout(this.resizeTimer);
      this.resizeTimer = window.setTimeout(() => this.fitVisible(), 60);
    }).observe(this.body);
    this.renderEmpty();
  }

  setFeatures(features: DockFeatures): void {
    this.features = features;
    this.renderEmpty();
  }

  setLifecycle(lifecycle: DockStatus['lifecycle']): void {
    this.lifecycle = lifecycle;
    this.renderEmpty();
  }

  /** Reconciles tabs with the server's list; follows the active terminal when it changes. */
  setList(list: DockTerminal[]): void {
    const ids = new Set(list.map((t) => t.id));
    for (const [id, view] of this.views) {
      if (ids.has(id)) continue;
      view.term.dispose();
      view.el.remove();
      view.tab.remove();
      this.views.delete(id);
      if (this.visible === id) this.visible = null;
    }
    for (const info of list) {
      const view = this.views.get(info.id) ?? this.create(info);
      view.info = info;
      view.tab.classList.toggle('not-ready', !info.ready);
      replace(view.tab, h('span', { class: 'dot' }), info.label || info.id, h('small', {}, info.id));
    }
    const active = list.find((t) => t.active)?.id ?? null;
    if (active !== this.serverActive) {
      this.serverActive = active;
      if (active) this.show(active);
    }
    if (this.pendingReveal && this.views.has(this.pendingReveal)) {
      this.show(this.pendingReveal);
      this.pendingReveal = null;
    }
    if (!this.visible && list[0]) this.show(list[0].id);
    const shown = this.visible ? this.views.get(this.visible) : undefined;
    this.trust.show(shown?.info ?? null, shown?.term ?? null);
    this.renderEmpty();
  }

  /** Reveals a terminal now, or once it appears in the list. */
  reveal(terminalId: string): void {
    if (this.views.has(terminalId)) this.show(terminalId);
    else this.pendingReveal = terminalId;
  }

  /** Starts a fresh replay for a terminal (the server sends all retained output next). */
  attached(terminalId: string, fromCursor: string | null): void {
    const view = this.views.get(terminalId);
    if (!view) return;
    view.pending = false;
    // a full reset (RIS) through the write queue: output written before it, still queued, is
    // parsed first and cleared with the rest, instead of landing after a synchronous reset()
    if (fromCursor === null) {
      view.term.write('\x1bc');
      this.trust.reset(terminalId);
    }
  }

  output(terminalId: string, data: string, cursor: string, gap: boolean): void {
    const view = this.views.get(terminalId);
    if (!view) return;
    if (gap) view.term.write('\r\n\x1b[2m[earlier output was dropped]\x1b[0m\r\n');
    view.term.write(data, () => this.trust.output(terminalId, view.term, cursor));
    view.cursor = cursor;
  }

  /** The socket closed: no attach sent on it will be answered. */
  disconnected(): void {
    for (const view of this.views.values()) view.pending = false;
  }

  /** After a reconnect or resync: resume every attached terminal from its cursor. */
  reattach(): void {
    for (const view of this.views.values()) {
      // a view attached by this very snapshot already has its replay on the way
      if (!view.attached || view.pending) continue;
      this.socket.send({
        type: 'terminal.attach',
        terminalId: view.info.id,
        ...(view.cursor ? { fromCursor: view.cursor } : {}),
      });
      view.pending = true;
    }
    this.fitVisible(true);
  }

  private create(info: DockTerminal): View {
    const term = new Terminal({
      fontFamily: 'ui-monospace, "SF Mono", "JetBrains Mono", Menlo, Consolas, "DejaVu Sans Mono", monospace',
      fontSize: 13,
      lineHeight: 1.15,
      cursorBlink: true,
      scrollback: 5000,
      theme: THEME,
      // decorations mark who typed each input in the scrollback
      allowProposedApi: true,
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    const el = h('div', { class: 'xterm-host', 'data-terminal': info.id, hidden: true });
    this.body.append(el);
    term.open(el);
    const tab = h('button', { class: 'tab', role: 'tab', type: 'button', 'data-terminal': info.id });
    tab.addEventListener('click', () => {
      this.show(info.id, true);
      this.socket.send({ type: 'terminal.activate', terminalId: info.id });
    });
    this.tabs.append(tab);
    const view: View = {
      info,
      term,
      fit,
      el,
      tab,
      cursor: undefined,
      attached: false,
      pending: false,
      size: '',
    };
    term.onData((data) => {
      for (let i = 0; i < data.length; i += MAX_INPUT_CHARS) {
        this.socket.send({
          type: 'terminal.input',
          terminalId: view.info.id,
          data: data.slice(i, i + MAX_INPUT_CHARS),
        });
      }
    });
    this.views.set(info.id, view);
    return view;
  }

  /** Reveals a terminal; `focus` when the person picked it (never steal focus on the agent's switch). */
  private show(id: string, focus = false): void {
    const view = this.views.get(id);
    if (!view) return;
    this.visible = id;
    for (const v of this.views.values()) {
      const on = v === view;
      v.el.hidden = !on;
      v.tab.classList.toggle('active', on);
      v.tab.setAttribute('aria-selected', String(on));
    }
    if (!view.attached) {
      view.attached = true;
      view.pending = true;
      this.socket.send({ type: 'terminal.attach', terminalId: id });
    }
    this.fitVisible(true);
    this.trust.show(view.info, view.term);
    if (focus) view.term.focus();
  }

  private fitVisible(force = false): void {
    const view = this.visible ? this.views.get(this.visible) : undefined;
    if (!view || view.el.hidden || this.body.clientWidth === 0) return;
    view.fit.fit();
    const size = `${view.term.cols}x${view.term.rows}`;
    if (size === view.size && !force) return;
    view.size = size;
    this.socket.send({
      type: 'terminal.resize',
      terminalId: view.info.id,
      cols: view.term.cols,
      rows: view.term.rows,
    });
  }

  private renderEmpty(): void {
    const none = this.views.size === 0;
    this.empty.hidden = !none;
    if (!none) return;
    let title = 'No terminal yet';
    let text = 'The agent opens one with create_terminal; it appears here and you can type in it.';
    if (!this.features.computer) {
      title = 'No computer on this server';
      text = 'Paddock runs here as a tool gateway only; tool calls still appear on the right.';
    } else if (!this.features.terminals) {
      title = 'Terminals are not available yet';
      text =
        'This server does not share terminals with the dock yet. Jobs and their output are on the right.';
    } else if (this.lifecycle !== 'running') {
      title = 'No computer running';
      text = 'Pick a profile and launch a computer; its terminals appear here.';
    }
    replace(this.empty, h('div', { class: 'empty-title' }, title), h('div', { class: 'empty-text' }, text));
  }
}
