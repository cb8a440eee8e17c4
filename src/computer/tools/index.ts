/**
 * The computer tools (tool set `computer`; read_file and write_file also in `builtin`).
 */
import type { Tool } from '../../tools/tool.js';
import type { ComputerSource } from '../manager.js';
import { checkpointTools } from './checkpoint-tools.js';
import { fileTools } from './file-tools.js';
import { jobTools } from './job-tools.js';
import { lifecycleTools } from './lifecycle-tools.js';
import { logTools } from './log-tools.js';
import { previewTools } from './preview-tools.js';
import { terminalTools } from './terminal-tools.js';

/**
 * list_profiles, launch_computer, get_computer_status, run_command, read_job, cancel_job,
 * list_terminals, create_terminal, switch_terminal, send_terminal_input, read_terminal_output,
 * list_files, read_file, write_file, navigate_preview, read_logs, create_launch_link,
 * checkpoint_computer, list_checkpoints, restore_checkpoint, fork_computer.
 */
export function createComputerTools(computers: ComputerSource): Tool[] {
  return [
    ...lifecycleTools(computers),
    ...jobTools(computers),
    ...terminalTools(computers),
    ...fileTools(computers),
    ...previewTools(computers),
    ...logTools(computers),
    ...checkpointTools(computers),
  ];
}
