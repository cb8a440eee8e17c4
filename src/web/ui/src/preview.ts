/**
 * The preview pane: a path bar and an iframe on the guest's web server. The iframe is
 * sandboxed without same-origin rights, so a page served by the computer can never act as
 * the dock (read it, or use its session).
 */
import type { DockFeatures, DockPreview } from '../../dock/protocol.js';
import { h, replace } from './dom.js';
import { PreviewPorts } from './preview-ports.js';
import type { DockSocket } from './socket.js';

const SANDBOX = 'allow-scripts allow-forms allow-modals allow-downloads';

export class PreviewPanel {
  readonly el: HTMLElement;
  private readonly input = h('input', {
    class: 'path',
    type: 'text',
    spellcheck: 'false',
    autocomplete: 'off',
    placeholder: '/index.html',
    'aria-label': 'Preview path',
    'data-testid': 'preview-path',
  });
  readonly ports: PreviewPorts;
  private readonly state = h('span', { class: 'preview-state', 'data-testid': 'preview-state' });
  private readonly frameHost = h('div', { class: 'preview-body' });
  private readonly empty = h('div', { class: 'empty' });
  private frame: HTMLIFrameElement | null = null;
  private navigation = -1;
  private features: DockFeatures = { computer: false, terminals: false, preview: false };

  constructor(
    private readonly socket: DockSocket,
    private readonly toast: (text: string, kind?: 'err' | 'ok') => void,
  ) {
    this.ports = new PreviewPorts(socket, (port) => void this.navigate('/', port));
    const form = h(
      'form',
      { class: 'pathbar' },
      this.ports.field,
      this.input,
      h('button', { type: 'submit', class: 'ghost' }, 'Go'),
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.navigate(this.input.value.trim() || '/', this.ports.chosen());
    });
    const reload = h(
      'button',
      { type: 'button', class: 'ghost icon', title: 'Reload', 'aria-label': 'Reload preview' },
      '↻',
    );
    reload.addEventListener('click', () => {
      if (this.frame) this.frame.src = this.frame.src;
    });
    this.el = h(
      'section',
      { class: 'panel preview', 'aria-label': 'Preview' },
      h(
        'div',
        { class: 'panel-head' },
        h('span', { class: 'panel-title' }, 'Preview'),
        form,
        reload,
        this.state,
      ),
      h('div', { class: 'preview-ports-row' }, h('span', { class: 'label' }, 'Listening'), this.ports.list),
      this.frameHost,
    );
    this.frameHost.append(this.empty);
    this.set(null);
  }

  setFeatures(features: DockFeatures): void {
    this.features = features;
    this.input.disabled = !features.preview;
  }

  set(preview: DockPreview | null): void {
    this.ports.showing(preview?.port ?? null);
    if (preview && document.activeElement !== this.input) this.input.value = preview.path ?? '';
    this.state.className = `preview-state ${preview?.status ?? 'idle'}`;
    this.state.textContent = preview && preview.status !== 'idle' ? preview.status : '';
    this.state.title = preview?.message ?? '';
    const url = preview?.url && isFrameable(preview.url) ? preview.url : null;
    if (preview && url && preview.status !== 'unreachable') {
      this.empty.hidden = true;
      if (preview.navigation !== this.navigation || !this.frame) {
        this.navigation = preview.navigation;
        this.frame?.remove();
        this.frame = h('iframe', {
          title: 'Preview',
          sandbox: SANDBOX,
          referrerpolicy: 'no-referrer',
          'data-testid': 'preview-frame',
        });
        this.frame.src = url;
        this.frameHost.append(this.frame);
      }
      return;
    }
    this.frame?.remove();
    this.frame = null;
    this.empty.hidden = false;
    if (preview?.status === 'unreachable') {
      replace(
        this.empty,
        h('div', { class: 'empty-title' }, preview.jobEnded ? 'The server stopped' : 'Nothing is listening'),
        h(
          'div',
          { class: 'empty-text' },
          preview.message ??
            `No server answers on port ${preview.port ?? '?'} inside the computer. Start one (for example python3 -m http.server), then navigate again.`,
        ),
      );
    } else if (!this.features.preview) {
      replace(
        this.empty,
        h('div', { class: 'empty-title' }, 'Preview is not available yet'),
        h(
          'div',
          { class: 'empty-text' },
          'This server does not relay the computer\u2019s web server to the dock yet.',
        ),
      );
    } else {
      replace(
        this.empty,
        h('div', { class: 'empty-title' }, 'Nothing previewed yet'),
        h(
          'div',
          { class: 'empty-text' },
          'When the agent calls navigate_preview, or you enter a path above, the page served inside the computer shows here.',
        ),
      );
    }
  }

  private async navigate(path: string, port?: number): Promise<void> {
    const reply = await this.socket.request({ type: 'preview.navigate', path, ...(port ? { port } : {}) });
    if (!reply.ok) this.toast(reply.message, 'err');
    this.ports.ask();
  }
}

/** Same-origin paths, or http(s) URLs of a separate preview origin. */
function isFrameable(url: string): boolean {
  if (url.startsWith('/') && !url.startsWith('//')) return true;
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}
