/** The header: the computer's status, the profile picker with launch, and the connection. */
import type {
  DockComputerSummary,
  DockLaunchProgress,
  DockProfile,
  DockStatus,
} from '../../dock/protocol.js';
import './header.css';
import { duration, h, replace } from './dom.js';
import { RelaunchConfirm } from './relaunch-confirm.js';
import type { Connection, DockSocket } from './socket.js';

const LIFECYCLE_LABEL: Record<DockStatus['lifecycle'], string> = {
  none: 'No computer',
  booting: 'Booting',
  running: 'Running',
  error: 'Error',
  stopped: 'Stopped',
  unavailable: 'Unavailable',
};

export class StatusBar {
  readonly el: HTMLElement;
  private readonly pill = h('span', { class: 'pill', 'data-testid': 'lifecycle' });
  private readonly details = h('span', { class: 'status-details', 'data-testid': 'status-details' });
  private readonly bootError = h('div', {
    class: 'boot-error',
    role: 'alert',
    hidden: true,
    'data-testid': 'boot-error',
  });
  private readonly select = h('select', { 'aria-label': 'Profile', 'data-testid': 'profile-select' });
  private readonly computers = h('select', {
    'aria-label': 'Computer',
    title: 'The computer the dock shows; launching acts on it',
    'data-testid': 'computer-select',
  });
  private readonly launchButton = h(
    'button',
    { class: 'primary', type: 'button', 'data-testid': 'launch' },
    'Launch',
  );
  private readonly conn = h('span', { class: 'conn', 'data-testid': 'connection' });
  /** Shown when the computer on screen runs in this very tab (a browser computer). */
  private readonly inThisTab = h(
    'span',
    {
      class: 'chip in-tab',
      hidden: true,
      'data-testid': 'in-this-tab',
      title: 'This computer runs in this browser tab: closing or reloading the tab ends it.',
    },
    'runs in this tab',
  );
  private hosted: number[] = [];
  private readonly notice = h('div', { class: 'notice', hidden: true, 'data-testid': 'notice' });
  private status: DockStatus | null = null;
  private watched: DockComputerSummary | null = null;
  private readonly confirm = new RelaunchConfirm();

  constructor(
    private readonly socket: DockSocket,
    private readonly toast: (text: string, kind?: 'err' | 'ok') => void,
  ) {
    const brand = h(
      'div',
      { class: 'brand' },
      h('span', { class: 'mark' }),
      h('b', {}, 'Paddock'),
      h('span', { class: 'muted' }, 'dock'),
    );
    const launch = h('div', { class: 'launch' }, this.select, this.launchButton);
    this.el = h(
      'header',
      { class: 'topbar' },
      brand,
      this.computers,
      h('div', { class: 'status' }, this.pill, this.inThisTab, this.details),
      h('div', { class: 'spacer' }),
      launch,
      h(
        'a',
        {
          class: 'muted',
          href: '/approvals',
          title: 'Every call that asked for approval, and who decided',
          'data-testid': 'approvals-link',
        },
        'Approvals',
      ),
      h(
        'a',
        {
          class: 'muted',
          href: '/clients',
          title: 'MCP clients signed in with OAuth',
          'data-testid': 'clients-link',
        },
        'Clients',
      ),
      this.conn,
    );
    this.launchButton.addEventListener('click', () => void this.onLaunch());
    this.computers.addEventListener('change', () => void this.onWatch());
  }

  /** The switcher: every computer of the server, the shown one selected. */
  setComputers(list: DockComputerSummary[], watching: string | null): void {
    const el = this.computers as HTMLSelectElement;
    this.computers.hidden = list.length === 0;
    replace(
      this.computers,
      ...list.map((c) => {
        const name = c.label ?? (c.name.startsWith('named:') ? c.name.slice('named:'.length) : c.name);
        const sessions = `${c.sessions} session${c.sessions === 1 ? '' : 's'}`;
        const idle = c.lifecycle === 'running' ? ` · idle ${duration(c.idleMs)}` : '';
        const workspace = c.workspace === 'keep' ? 'workspace kept' : 'fresh workspace';
        return h(
          'option',
          {
            value: c.name,
            'data-computer': c.name,
            title: `${c.name} · ${sessions}${idle} · ${workspace}`,
          },
          `${name} · ${c.profileId ?? 'no profile'} · ${c.lifecycle}`,
        );
      }),
    );
    if (watching) el.value = watching;
    this.watched = list.find((c) => c.name === watching) ?? null;
  }

  private async onWatch(): Promise<void> {
    const name = (this.computers as HTMLSelectElement).value;
    const reply = await this.socket.request({ type: 'computer.watch', name });
    if (!reply.ok) this.toast(reply.message, 'err');
  }

  /** The row under the header (boot error, launch-link progress). */
  get banners(): HTMLElement[] {
    return [this.confirm.el, this.bootError, this.notice];
  }

  /** The generations of the computers this tab runs (browser computers). */
  setHosted(generations: number[]): void {
    this.hosted = generations;
    this.markHosted();
  }

  private markHosted(): void {
    const g = this.status?.generation;
    this.inThisTab.hidden = g === null || g === undefined || !this.hosted.includes(g);
  }

  setStatus(status: DockStatus): void {
    this.status = status;
    this.markHosted();
    this.pill.className = `pill ${status.lifecycle}`;
    this.pill.textContent = LIFECYCLE_LABEL[status.lifecycle];
    const parts: (Node | string)[] = [];
    if (status.profileName) parts.push(h('b', {}, status.profileName), h('code', {}, status.profileId ?? ''));
    if (status.generation !== null)
      parts.push(h('span', { class: 'chip', title: 'Generation' }, `g${status.generation}`));
    if (status.bootMs !== null && status.lifecycle === 'running')
      parts.push(h('span', { class: 'muted' }, `booted in ${duration(status.bootMs)}`));
    if (status.message && status.lifecycle !== 'error')
      parts.push(h('span', { class: 'muted' }, status.message));
    replace(this.details, ...parts);
    this.bootError.hidden = !status.bootError;
    replace(this.bootError, status.bootError ? h('b', {}, 'Boot error: ') : null, status.bootError ?? '');
    const usable = status.lifecycle !== 'unavailable';
    this.select.disabled = !usable;
    this.launchButton.disabled = !usable || status.lifecycle === 'booting';
    if (status.profileId && !this.select.dataset.touched) this.select.value = status.profileId;
  }

  setProfiles(profiles: DockProfile[]): void {
    const current = this.select.value;
    replace(
      this.select,
      ...profiles.map((p) =>
        h(
          'option',
          {
            value: p.id,
            disabled: !p.available,
            title: p.available ? p.description : (p.unavailableReason ?? ''),
          },
          p.available ? p.name : `${p.name} (unavailable)`,
        ),
      ),
    );
    const keep = profiles.find((p) => p.id === (current || this.status?.profileId) && p.available);
    const first = keep ?? profiles.find((p) => p.available);
    if (first) this.select.value = first.id;
    this.select.onchange = () => {
      this.select.dataset.touched = '1';
    };
  }

  setConnection(state: Connection): void {
    const label: Record<Connection, string> = {
      connecting: 'Connecting…',
      live: 'Live',
      reconnecting: 'Reconnecting…',
      'signed-out': 'Signed out',
    };
    this.conn.className = `conn ${state}`;
    this.conn.textContent = label[state];
    this.conn.title = state === 'signed-out' ? 'Open the login link that paddock serve printed.' : '';
  }

  setLaunch(launch: DockLaunchProgress | null, linkOfPage: string | null): void {
    if (!launch || launch.linkId !== linkOfPage) {
      this.notice.hidden = true;
      return;
    }
    this.notice.hidden = false;
    this.notice.className = `notice ${launch.state}`;
    const what =
      launch.state === 'booting'
        ? 'is booting…'
        : launch.state === 'running'
          ? launch.jobId
            ? `is running; its startup script runs as ${launch.jobId} (see Jobs).`
            : 'is running.'
          : `failed: ${launch.error ?? 'see the logs.'}`;
    replace(this.notice, 'Launch link ', h('code', {}, launch.linkId), ` ${what}`);
  }

  private async onLaunch(): Promise<void> {
    const profileId = this.select.value;
    if (!profileId) return;
    const s = this.status;
    const replacing = s && s.generation !== null && (s.lifecycle === 'running' || s.lifecycle === 'error');
    let keepWorkspace = false;
    if (replacing) {
      const choice = await this.confirm.ask({
        generation: s.generation ?? 0,
        from: s.profileName ?? s.profileId ?? 'unknown',
        to: this.select.selectedOptions[0]?.textContent ?? profileId,
        workspaceKept: this.watched?.workspace === 'keep',
      });
      if (choice === null) return;
      keepWorkspace = choice === 'keep' && this.watched?.workspace !== 'keep';
    }
    this.launchButton.disabled = true;
    const reply = await this.socket.request({
      type: 'launch',
      profileId,
      ...(keepWorkspace ? { keepWorkspace: true } : {}),
    });
    this.launchButton.disabled = false;
    if (!reply.ok) this.toast(reply.message, 'err');
  }
}
