/** What the dock page shows of calls: the summary line (shared with the CLI) and the polls it folds. */
export { summarizeCall } from '../../audit/call-summary.js';

/** Tools an agent calls to wait and watch: the activity folds runs of them into one row. */
export const POLL_TOOLS: ReadonlySet<string> = new Set([
  'get_computer_status',
  'read_job',
  'read_terminal_output',
]);
