/**
 * The computer view (MCP Apps): the computer's terminal, the output of the job a model started,
 * the preview and the approval cards of this conversation's waiting calls. It talks to Paddock
 * only through its host's tool-call bridge (`App.callServerTool`): it holds no credential, sets
 * no cookie and opens no connection; every call is one of the view tools, audited `via: app`.
 */
import {
  App,
  applyDocumentTheme,
  applyHostStyleVariables,
  type McpUiHostContext,
} from '@modelcontextprotocol/ext-apps';
import '@xterm/xterm/css/xterm.css';
import { renderApprovals, renderJob, showProblem, type ViewPage, viewPage } from './render.js';
import { jobOfResult, type Position, type ViewState } from './state.js';
import './styles.css';

/** A large result travels once, as JSON text: its first text block, parsed (undefined if not JSON). */
function jsonOf(content: readonly { type: string; text?: string }[] | undefined): unknown {
  const text = content?.find((c) => c.type === 'text')?.text;
  try {
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Takes the host's theme and style variables, so the view looks like the chat around it. */
function applyHostLook(context: McpUiHostContext | undefined): void {
  if (context?.theme) applyDocumentTheme(context.theme);
  if (context?.styles?.variables) applyHostStyleVariables(context.styles.variables);
}

/** How long one watch waits for a change (the server caps it at 20 s). */
const WATCH_MS = 15_000;
/** Pause after a failed watch before the next. */
const RETRY_MS = 2000;

/**
 * Wires the view to its host: the handlers of the host's notifications, the terminal's keys and
 * the buttons; `watch` keeps the page current until the host tears the view down.
 */
function computerView(app: App, page: ViewPage): { watch(): Promise<void> } {
  let position: Position = {};
  let shown: ViewState | undefined;
  let watching: AbortController | undefined;
  let previewShown = '';

  /** Calls a view tool through the host; the structured answer, or an Error with the tool's message. */
  async function call<T>(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<T> {
    const result = await app.callServerTool({ name, arguments: args }, signal ? { signal } : undefined);
    const text = result.content?.find((c) => c.type === 'text')?.text ?? '';
    if (result.isError) {
      let message = text;
      try {
        message = (JSON.parse(text) as { message?: string }).message ?? text;
      } catch {
        // a plain-text error
      }
      throw new Error(message || `${name} failed`);
    }
    // a large answer travels once, as JSON text, without structuredContent
    return (result.structuredContent ?? JSON.parse(text)) as T;
  }

  /** Follows the job a model's call started (run_command's result names it). */
  function follow(jobId: string): void {
    if (position.jobId === jobId) return;
    position = { ...position, jobId, jobCursor: undefined };
    page.jobOutput.textContent = '';
    watching?.abort();
  }

  app.ontoolresult = (result) => {
    const jobId = jobOfResult(result.structuredContent ?? jsonOf(result.content));
    if (jobId) follow(jobId);
  };
  app.onhostcontextchanged = (context) => applyHostLook(context);
  // the host unmounts the view: the pending watch is cancelled and no other starts
  let closed = false;
  app.onteardown = () => {
    closed = true;
    watching?.abort();
    return {};
  };

  function apply(state: ViewState): void {
    shown = state;
    const c = state.computer;
    page.computerState.textContent =
      c.lifecycle === 'running' || c.generation !== null
        ? `${c.lifecycle}${c.profileName ? ` · ${c.profileName}` : ''}${c.generation !== null ? ` · g${c.generation}` : ''}`
        : c.lifecycle;
    if (c.bootError) showProblem(page, c.bootError);
    // the terminal
    const t = state.terminal;
    if (t) {
      if (t.terminalId !== position.terminalId) page.term.reset();
      if (t.output) page.term.write(t.output);
      position = { ...position, terminalId: t.terminalId, terminalCursor: t.nextCursor };
    }
    const active = state.terminals.find((x) => x.active);
    page.openTerminal.hidden = active !== undefined || c.lifecycle !== 'running';
    page.terminalNote.textContent = !active
      ? 'no terminal open'
      : active.heldBy
        ? `held by ${active.heldBy}`
        : state.canType
          ? `${active.label}: type here`
          : `${active.label}: read-only (the policy does not let the view type)`;
    page.term.options.disableStdin = !state.canType;
    // the job
    const job = state.job;
    if (job) {
      renderJob(page, job);
      if ('nextCursor' in job) position = { ...position, jobCursor: job.nextCursor };
    }
    // the preview
    const p = state.preview;
    page.previewPanel.hidden = p.port === null || p.status === 'idle';
    const where = `${p.port}:${p.path}:${p.navigation}:${p.status}`;
    if (p.port !== null && p.status !== 'idle' && where !== previewShown) {
      previewShown = where;
      void refreshPreview();
    }
    page.previewWhere.textContent = p.port === null ? '' : `port ${p.port} ${p.path ?? '/'} · ${p.status}`;
    renderApprovals(page, state.approvals, state.canDecide, decide);
    position = { ...position, version: state.version };
    page.root.setAttribute('aria-busy', 'false');
  }

  async function decide(id: string, approve: boolean): Promise<void> {
    try {
      await call('view_decide_approval', { approvalId: id, decision: approve ? 'approve' : 'deny' });
      showProblem(page, null);
    } catch (e) {
      showProblem(page, (e as Error).message);
    }
  }

  async function refreshPreview(): Promise<void> {
    try {
      const snap = await call<{ text: string | null; contentType: string | null; httpStatus: number }>(
        'view_fetch_preview',
        {},
      );
      page.preview.srcdoc =
        snap.text ?? `<p>The page is ${snap.contentType ?? 'not text'}; open it in the dock to see it.</p>`;
    } catch (e) {
      page.preview.srcdoc = `<p>${escapeHtml((e as Error).message)}</p>`;
    }
  }

  function escapeHtml(text: string): string {
    return text.replace(/[&<>"]/g, (ch) => `&#${ch.charCodeAt(0)};`);
  }

  /** Keystrokes typed while a call is under way go out together with the next. */
  let typed = '';
  let sending = false;
  async function sendTyped(): Promise<void> {
    if (sending || typed === '' || !position.terminalId) return;
    sending = true;
    const data = typed.slice(0, 4096);
    typed = typed.slice(data.length);
    try {
      await call('view_type_in_terminal', { terminalId: position.terminalId, data });
    } catch (e) {
      showProblem(page, (e as Error).message);
    } finally {
      sending = false;
      void sendTyped();
    }
  }
  page.term.onData((data) => {
    if (!shown?.canType) return;
    typed += data;
    void sendTyped();
  });

  page.openTerminal.addEventListener('click', () => {
    void call('view_open_terminal', {}).catch((e: Error) => showProblem(page, e.message));
  });
  page.previewRefresh.addEventListener('click', () => void refreshPreview());

  async function watch(): Promise<void> {
    while (!closed) {
      watching = new AbortController();
      try {
        const state = await call<ViewState>(
          'view_watch_computer',
          { ...position, waitMs: shown ? WATCH_MS : 0 },
          watching.signal,
        );
        apply(state);
        if (!shown?.computer.bootError) showProblem(page, null);
      } catch (e) {
        if (watching.signal.aborted || closed) continue;
        showProblem(page, (e as Error).message);
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  return { watch };
}

const app = new App({ name: 'paddock-computer', version: '1.0.0' }, {}, { autoResize: true });
const view = computerView(app, viewPage());
await app.connect();
applyHostLook(app.getHostContext());
void view.watch();
