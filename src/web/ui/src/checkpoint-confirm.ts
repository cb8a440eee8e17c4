/**
 * The questions the timeline asks before it acts: a restore kills the computer's processes (like
 * a relaunch), so it is confirmed; a fork needs the new computer's name.
 */
import type { DockCheckpoint } from '../../dock/protocol.js';
import { clock, h, replace } from './dom.js';

/** What the person answered: restore, fork with a name, or nothing. */
export type CheckpointAnswer = { restore: true } | { fork: string } | null;

/** `manual "before the upgrade"` or `before run_command`. */
export function checkpointTitle(c: DockCheckpoint): string {
  return c.label ?? (c.before ? `before ${c.before.tool}` : c.trigger);
}

export class CheckpointConfirm {
  readonly el = h('div', {
    class: 'relaunch-confirm checkpoint-confirm',
    role: 'alertdialog',
    hidden: true,
    'data-testid': 'checkpoint-confirm',
  });
  private answer: ((a: CheckpointAnswer) => void) | null = null;

  /** Asks whether to restore `c` on `computer` (`why`: what the person clicked it for). */
  restore(computer: string, c: DockCheckpoint, why?: string): Promise<CheckpointAnswer> {
    const go = this.button('Restore', 'primary danger', { restore: true }, 'restore-go');
    return this.show(
      'Restore the computer?',
      h(
        'div',
        { class: 'relaunch-text' },
        h('b', {}, `Restore ${computer} to “${checkpointTitle(c)}” (${clock(c.createdAt)})?`),
        why ? ` ${why}.` : '',
        ' Every process in it stops and /workspace becomes what it was then. ',
        'Its files as they are now are saved as a checkpoint first, so this can be undone.',
      ),
      [go, this.button('Cancel', 'ghost', null, 'restore-cancel')],
      go,
    );
  }

  /** Asks for the name of a new computer booted from `c`. */
  fork(c: DockCheckpoint): Promise<CheckpointAnswer> {
    const name = h('input', {
      type: 'text',
      class: 'path fork-name',
      placeholder: 'new-computer-name',
      maxlength: 63,
      pattern: '[a-z0-9][a-z0-9-]*',
      'aria-label': 'Name of the new computer',
      'data-testid': 'fork-name',
    });
    const go = h('button', { type: 'button', class: 'primary', 'data-testid': 'fork-go' }, 'Fork');
    const submit = () => {
      const value = name.value.trim();
      if (value) this.settle({ fork: value });
      else name.focus();
    };
    go.addEventListener('click', submit);
    name.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') submit();
    });
    const asked = this.show(
      'Fork into a new computer',
      h(
        'div',
        { class: 'relaunch-text' },
        h('b', {}, `Boot a new computer from “${checkpointTitle(c)}” (${clock(c.createdAt)}).`),
        ' This one keeps running; the two diverge from there. ',
        name,
      ),
      [go, this.button('Cancel', 'ghost', null, 'fork-cancel')],
      name,
    );
    return asked;
  }

  private button(label: string, cls: string, answer: CheckpointAnswer, testid: string): HTMLElement {
    const b = h('button', { type: 'button', class: cls, 'data-testid': testid }, label);
    b.addEventListener('click', () => this.settle(answer));
    return b;
  }

  private show(
    label: string,
    text: HTMLElement,
    actions: HTMLElement[],
    focus: HTMLElement,
  ): Promise<CheckpointAnswer> {
    this.answer?.(null);
    this.el.setAttribute('aria-label', label);
    replace(this.el, text, h('div', { class: 'relaunch-actions' }, ...actions));
    this.el.hidden = false;
    focus.focus();
    return new Promise((resolve) => {
      this.answer = resolve;
    });
  }

  private settle(answer: CheckpointAnswer): void {
    this.el.hidden = true;
    const pending = this.answer;
    this.answer = null;
    pending?.(answer);
  }
}
