/**
 * The question a relaunch asks first: what is lost (every process, and a fresh /workspace), and
 * the choice to carry /workspace over instead of deleting it.
 */
import { h, replace } from './dom.js';

/** What the person chose: relaunch keeping /workspace, relaunch deleting it, or not at all. */
export type RelaunchChoice = 'keep' | 'delete' | null;

export interface RelaunchQuestion {
  generation: number;
  /** The profile running now and the one to launch. */
  from: string;
  to: string;
  /** The computer keeps its /workspace anyway (its profile or name says `keep`). */
  workspaceKept: boolean;
}

export class RelaunchConfirm {
  readonly el = h('div', {
    class: 'relaunch-confirm',
    role: 'alertdialog',
    'aria-label': 'Relaunch the computer?',
    hidden: true,
    'data-testid': 'relaunch-confirm',
  });
  private answer: ((choice: RelaunchChoice) => void) | null = null;

  /** Shows the question; resolves with the choice (a new question answers the old one `null`). */
  ask(q: RelaunchQuestion): Promise<RelaunchChoice> {
    this.answer?.(null);
    const button = (label: string, cls: string, choice: RelaunchChoice, testid: string) => {
      const b = h('button', { type: 'button', class: cls, 'data-testid': testid }, label);
      b.addEventListener('click', () => this.settle(choice));
      return b;
    };
    const lost = q.workspaceKept
      ? 'Every process in it stops; its /workspace is kept (this computer keeps workspaces).'
      : 'Every process in it stops and its /workspace is deleted, unless you keep it.';
    replace(
      this.el,
      h(
        'div',
        { class: 'relaunch-text' },
        h('b', {}, `Replace g${q.generation} (${q.from}) with a new ${q.to} computer?`),
        ' ',
        lost,
      ),
      h(
        'div',
        { class: 'relaunch-actions' },
        q.workspaceKept
          ? button('Relaunch', 'primary', 'delete', 'relaunch-go')
          : button('Relaunch and keep /workspace', 'primary', 'keep', 'relaunch-keep'),
        q.workspaceKept
          ? null
          : button('Relaunch and delete /workspace', 'ghost danger', 'delete', 'relaunch-delete'),
        button('Cancel', 'ghost', null, 'relaunch-cancel'),
      ),
    );
    this.el.hidden = false;
    return new Promise((resolve) => {
      this.answer = resolve;
    });
  }

  private settle(choice: RelaunchChoice): void {
    this.el.hidden = true;
    const answer = this.answer;
    this.answer = null;
    answer?.(choice);
  }
}
