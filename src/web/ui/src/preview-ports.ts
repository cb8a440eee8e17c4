/**
 * The preview's port: a field for any port inside the computer and a row of the ports something
 * listens on right now (asked of the server when the page loads, when jobs change and when the
 * person opens the field), each a button that shows that server.
 */
import './services.css';
import { h, replace } from './dom.js';
import type { DockSocket } from './socket.js';

/** Fewest milliseconds between two asks for the ports. */
const ASK_EVERY_MS = 1500;

export class PreviewPorts {
  readonly field = h('input', {
    class: 'port mono',
    type: 'number',
    min: 1,
    max: 65535,
    inputmode: 'numeric',
    'aria-label': 'Port inside the computer',
    title: 'Port inside the computer: any port a server listens on',
    'data-testid': 'preview-port',
  });
  readonly list = h('span', {
    class: 'ports',
    'data-testid': 'preview-ports',
    'aria-label': 'Listening ports',
  });
  private lastAsk = 0;
  private askTimer: number | undefined;
  private current: number | null = null;

  constructor(
    private readonly socket: DockSocket,
    private readonly open: (port: number) => void,
  ) {
    this.field.addEventListener('focus', () => this.ask());
    this.set([]);
  }

  /** The port the preview shows (the field follows it unless the person is typing). */
  showing(port: number | null): void {
    this.current = port;
    if (document.activeElement !== this.field) this.field.value = port === null ? '' : String(port);
    for (const b of this.list.querySelectorAll<HTMLButtonElement>('button'))
      b.classList.toggle('active', Number(b.dataset.port) === port);
  }

  /** The port typed in the field, when it differs from the one shown. */
  chosen(): number | undefined {
    const n = Number(this.field.value);
    return Number.isInteger(n) && n >= 1 && n <= 65535 && n !== this.current ? n : undefined;
  }

  /** The server's answer: the listening ports. */
  set(ports: number[]): void {
    if (ports.length === 0) {
      replace(this.list, h('span', { class: 'muted small-text' }, 'no listening ports'));
      return;
    }
    replace(
      this.list,
      ...ports.map((port) => {
        const b = h(
          'button',
          {
            type: 'button',
            class: `chip port-chip${port === this.current ? ' active' : ''}`,
            'data-port': port,
            title: `Show the server on port ${port}`,
          },
          `:${port}`,
        );
        b.addEventListener('click', () => this.open(port));
        return b;
      }),
    );
  }

  /** Asks the server for the ports, at most every ASK_EVERY_MS (a later ask is deferred, not lost). */
  ask(): void {
    const wait = this.lastAsk + ASK_EVERY_MS - Date.now();
    if (wait > 0) {
      window.clearTimeout(this.askTimer);
      this.askTimer = window.setTimeout(() => this.ask(), wait);
      return;
    }
    this.lastAsk = Date.now();
    this.socket.send({ type: 'preview.ports' });
  }
}
