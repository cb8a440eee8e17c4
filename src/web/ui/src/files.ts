/**
 * The file browser of the computer shown: a directory listing to walk, a download per file, an
 * upload into the directory shown, and the files changed in /workspace since the computer
 * launched. Each action is a computer tool the server calls as the person at the dock (audited).
 */
import './files.css';
import { clock, h, replace } from './dom.js';

const FILES = '/dock/files';
/** Largest upload (one write_file). */
const MAX_UPLOAD_BYTES = 64 * 1024;

interface Entry {
  name: string;
  path: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  mtimeMs: number;
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

async function json(
  url: string,
  init?: RequestInit,
): Promise<{ ok: boolean; body: Record<string, unknown> }> {
  const res = await fetch(url, { credentials: 'same-origin', ...init });
  let body: Record<string, unknown> = {};
  try {
    body = (await res.json()) as Record<string, unknown>;
  } catch {
    body = { message: `The server answered ${res.status}.` };
  }
  return { ok: res.ok, body };
}

export class FileBrowser {
  readonly el = h('div', { class: 'list files', 'data-testid': 'file-browser', hidden: true });
  private readonly crumbs = h('div', { class: 'crumbs mono', 'data-testid': 'files-path' });
  private readonly list = h('div', { class: 'file-list', 'data-testid': 'file-list' });
  private readonly upload = h('input', {
    type: 'file',
    'data-testid': 'files-upload',
    'aria-label': 'Upload a file',
  });
  private readonly changedButton = h(
    'button',
    { type: 'button', class: 'ghost small', 'data-testid': 'files-changed' },
    'Changed since launch',
  );
  private path = '/workspace';
  private showingChanged = false;

  constructor(private readonly toast: (text: string, kind?: 'err' | 'ok') => void) {
    const uploadLabel = h(
      'label',
      { class: 'ghost small upload', title: 'Upload into this directory (up to 64 KiB)' },
      'Upload',
      this.upload,
    );
    const refresh = h('button', { type: 'button', class: 'ghost small', title: 'Reload the listing' }, '↻');
    refresh.addEventListener('click', () => void this.open(this.path));
    this.changedButton.addEventListener(
      'click',
      () => void (this.showingChanged ? this.open(this.path) : this.changed()),
    );
    this.upload.addEventListener('change', () => void this.send());
    this.el.append(
      h('div', { class: 'files-bar' }, this.crumbs, refresh, uploadLabel, this.changedButton),
      this.list,
    );
  }

  /** Shown: (re)load the listing. */
  shown(): void {
    void (this.showingChanged ? this.changed() : this.open(this.path));
  }

  async open(path: string): Promise<void> {
    this.showingChanged = false;
    this.changedButton.classList.remove('active');
    const r = await json(`${FILES}/list?path=${encodeURIComponent(path)}`);
    if (!r.ok) {
      this.toast(String(r.body.message ?? 'Could not list the directory.'), 'err');
      return;
    }
    this.path = path;
    this.renderCrumbs();
    const entries = ((r.body.entries as Entry[] | undefined) ?? [])
      .slice()
      .sort((a, b) => Number(b.type === 'dir') - Number(a.type === 'dir') || a.name.localeCompare(b.name));
    const up = path !== '/' ? this.row('..', 'dir', parentOf(path), null, null) : null;
    replace(
      this.list,
      up,
      ...entries.map((e) => this.row(e.name, e.type, e.path, e.size, e.mtimeMs)),
      entries.length === 0
        ? h('div', { class: 'muted small-text empty-dir' }, 'This directory is empty.')
        : null,
    );
  }

  private async changed(): Promise<void> {
    const r = await json(`${FILES}/changed`);
    if (!r.ok) {
      this.toast(String(r.body.message ?? 'Could not list the changes.'), 'err');
      return;
    }
    this.showingChanged = true;
    this.changedButton.classList.add('active');
    replace(
      this.crumbs,
      h(
        'span',
        { 'data-testid': 'files-changed-title' },
        `Changed in /workspace since launch (${clock(Number(r.body.since))})`,
      ),
    );
    const files = (r.body.files as { path: string; size: number; mtimeMs: number }[]) ?? [];
    replace(
      this.list,
      ...files.map((f) => this.row(f.path.replace(/^\/workspace\//, ''), 'file', f.path, f.size, f.mtimeMs)),
      files.length === 0
        ? h('div', { class: 'muted small-text empty-dir' }, 'Nothing changed since launch.')
        : null,
    );
  }

  private row(
    name: string,
    type: Entry['type'],
    path: string,
    size: number | null,
    mtimeMs: number | null,
  ): HTMLElement {
    const icon = type === 'dir' ? '▸' : type === 'symlink' ? '↪' : '·';
    const label =
      type === 'dir'
        ? h('button', { type: 'button', class: 'link name', 'data-path': path }, name)
        : h('span', { class: 'name mono' }, name);
    if (type === 'dir') label.addEventListener('click', () => void this.open(path));
    const download =
      type === 'file'
        ? h(
            'a',
            {
              class: 'download',
              href: `${FILES}/download?path=${encodeURIComponent(path)}`,
              download: name.split('/').pop() ?? 'download',
              'data-testid': 'file-download',
            },
            'Download',
          )
        : null;
    return h(
      'div',
      { class: `file-row ${type}`, 'data-file': path },
      h('span', { class: 'icon' }, icon),
      label,
      h('span', { class: 'size mono muted' }, size === null || type === 'dir' ? '' : bytes(size)),
      h('span', { class: 'mtime mono muted' }, mtimeMs ? clock(mtimeMs) : ''),
      download,
    );
  }

  private renderCrumbs(): void {
    const parts = this.path.split('/').filter(Boolean);
    const crumbs: (HTMLElement | string)[] = [];
    let at = '';
    const root = h('button', { type: 'button', class: 'link' }, '/');
    root.addEventListener('click', () => void this.open('/'));
    crumbs.push(root);
    for (const part of parts) {
      at += `/${part}`;
      const target = at;
      const b = h('button', { type: 'button', class: 'link' }, part);
      b.addEventListener('click', () => void this.open(target));
      crumbs.push(b, '/');
    }
    replace(this.crumbs, ...crumbs);
  }

  private async send(): Promise<void> {
    const file = this.upload.files?.[0];
    this.upload.value = '';
    if (!file) return;
    if (file.size > MAX_UPLOAD_BYTES) {
      this.toast(`${file.name} is ${bytes(file.size)}; uploads take at most 64 KiB.`, 'err');
      return;
    }
    const target = `${this.path.replace(/\/$/, '')}/${file.name}`;
    const r = await json(`${FILES}/upload?path=${encodeURIComponent(target)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: await file.arrayBuffer(),
    });
    if (!r.ok) {
      this.toast(String(r.body.message ?? 'The upload failed.'), 'err');
      return;
    }
    this.toast(`Uploaded ${target}.`, 'ok');
    await this.open(this.path);
  }
}

function parentOf(path: string): string {
  const up = path.replace(/\/+$/, '').split('/').slice(0, -1).join('/');
  return up || '/';
}
