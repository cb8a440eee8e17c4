/**
 * navigate_preview.
 */
import { s } from '../../tools/schema.js';
import type { Tool } from '../../tools/tool.js';
import type { ComputerSource } from '../manager.js';
import { computerTool, inputObject, structured } from './common.js';

export function previewTools(computers: ComputerSource): Tool[] {
  return [
    computerTool(computers, {
      name: 'navigate_preview',
      title: 'Navigate the preview',
      kind: 'act',
      description:
        "Shows a page served from inside the computer in the dock's preview pane and reveals it to the person, to look at a web app or generated content together. " +
        'Give a path on the computer\'s preview server such as /hello.html?x=1#title — never a full URL, a ".." segment or a backslash. The port is the profile\'s preview port (get_computer_status shows it); start a server there first, e.g. "python3 -m http.server <port>" in the background with run_command or in a terminal. ' +
        'The answer repeats the navigation request and what a quick probe observed (whether anything listens on the port, the HTTP status it returned). That is not proof the page rendered correctly in the dock.',
      input: inputObject(
        {
          path: s.string({
            description:
              'Path on the preview server, starting with "/", e.g. /index.html?x=1#top. No scheme or host, "..", or backslashes.',
            maxLength: 4096,
          }),
        },
        ['path'],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const { path } = input;
        const { state, observed, generation } = await manager.preview.navigateAndObserve(path, ctx.signal);
        ctx.noteComputer({ generation });
        return structured({
          requested: { path, url: state.url, port: observed.port, navigation: state.navigation },
          observed,
          preview: state,
          note: 'The dock was asked to show this path; the probe above is what the relay saw, not proof that the page rendered.',
        });
      },
    }),
  ];
}
