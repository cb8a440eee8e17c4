/**
 * C0 controls other than tab and newline, DEL, and C1 controls: what starts escape sequences
 * (CSI, OSC 52 clipboard writes, window titles) or moves the cursor on a terminal.
 */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * Text that is safe to print to an operator's terminal: every control character that could
 * start an escape sequence is shown as a visible `\xNN` instead (ESC becomes `\x1b`), so a
 * line keeps its content but drives nothing. Tabs and newlines stay.
 */
export function neutralizeControls(text: string): string {
  return text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
