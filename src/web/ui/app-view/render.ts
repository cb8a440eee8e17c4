/** The view's page: its elements, the terminal, the job's output and the approval cards. */
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import type { ApprovalCard, ViewState } from './state.js';

/** The elements the view updates. */
export interface ViewPage {
  root: HTMLElement;
  computerState: HTMLElement;
  term: Terminal;
  terminalNote: HTMLElement;
  openTerminal: HTMLButtonElement;
  jobPanel: HTMLElement;
  jobId: HTMLElement;
  jobState: HTMLElement;
  jobOutput: HTMLElement;
  previewPanel: HTMLElement;
  previewWhere: HTMLElement;
  previewRefresh: HTMLButtonElement;
  preview: HTMLIFrameElement;
  approvals: HTMLElement;
  problem: HTMLElement;
}

function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`The view page has no #${id}.`);
  return el as T;
}

/** Finds the page's elements and opens the terminal emulator. */
export function viewPage(): ViewPage {
  const term = new Terminal({ convertEol: false, fontSize: 13, scrollback: 2000, disableStdin: true });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(byId('terminal'));
  fit.fit();
  new ResizeObserver(() => fit.fit()).observe(byId('terminal'));
  return {
    root: byId('view'),
    computerState: byId('computer-state'),
    term,
    terminalNote: byId('terminal-note'),
    openTerminal: byId('open-terminal'),
    jobPanel: byId('job-panel'),
    jobId: byId('job-id'),
    jobState: byId('job-state'),
    jobOutput: byId('job-output'),
    previewPanel: byId('preview-panel'),
    previewWhere: byId('preview-where'),
    previewRefresh: byId('preview-refresh'),
    preview: byId('preview'),
    approvals: byId('approvals'),
    problem: byId('problem'),
  };
}

/** Shows (or clears) a problem line. */
export function showProblem(page: ViewPage, message: string | null): void {
  page.problem.hidden = message === null;
  page.problem.textContent = message ?? '';
}

/** Appends the job's new output and shows its state. */
export function renderJob(page: ViewPage, job: NonNullable<ViewState['job']>): void {
  page.jobPanel.hidden = false;
  page.jobId.textContent = job.jobId;
  if ('error' in job) {
    page.jobState.textContent = job.error.message;
    return;
  }
  page.jobState.textContent =
    job.state === 'running'
      ? 'running'
      : `${job.state}${job.exitCode !== null ? ` (exit ${job.exitCode})` : ''}`;
  const atBottom = page.jobOutput.scrollTop + page.jobOutput.clientHeight >= page.jobOutput.scrollHeight - 4;
  if (job.stdout) page.jobOutput.append(job.stdout);
  if (job.stderr) {
    const err = document.createElement('span');
    err.className = 'stderr';
    err.textContent = job.stderr;
    page.jobOutput.append(err);
  }
  if (atBottom) page.jobOutput.scrollTop = page.jobOutput.scrollHeight;
}

/** Renders one card per waiting call; Approve / Deny only when this conversation may decide. */
export function renderApprovals(
  page: ViewPage,
  cards: readonly ApprovalCard[],
  canDecide: boolean,
  decide: (id: string, approve: boolean) => Promise<void>,
): void {
  const shown = new Set(cards.map((c) => c.id));
  for (const el of [...page.approvals.children])
    if (!shown.has((el as HTMLElement).dataset.approval ?? '')) el.remove();
  for (const card of cards) {
    if (page.approvals.querySelector(`[data-approval="${CSS.escape(card.id)}"]`)) continue;
    const el = document.createElement('article');
    el.className = 'card';
    el.dataset.approval = card.id;
    const title = document.createElement('strong');
    title.textContent = `${card.tool} waits for your approval`;
    const args = document.createElement('pre');
    args.textContent = JSON.stringify(card.arguments, null, 2);
    const actions = document.createElement('div');
    actions.className = 'actions';
    if (canDecide) {
      for (const [label, approve] of [
        ['Approve', true],
        ['Deny', false],
      ] as const) {
        const button = document.createElement('button');
        button.type = 'button';
        button.textContent = label;
        if (approve) button.className = 'approve';
        button.addEventListener('click', () => {
          for (const b of actions.querySelectorAll('button')) b.disabled = true;
          void decide(card.id, approve);
        });
        actions.append(button);
      }
    } else {
      actions.textContent = 'Decide it in the dock or with `paddock approvals`.';
    }
    el.append(title, args, actions);
    page.approvals.append(el);
  }
}
