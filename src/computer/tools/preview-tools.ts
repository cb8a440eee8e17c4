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
        'Give a path on the computer\'s preview server such as /hello.html?x=1#title — never a full URL, a ".." segment or a backslash. Without port the profile\'s preview port is shown (or the last one navigated to); pass port to show a server on any other port (get_computer_status lists the ports the computer listens on). ' +
        'Start the server first as a service, e.g. run_command with script "python3 -m http.server 8000" and background: true, so no timeout ends it. ' +
        'The answer repeats the navigation request and what a quick probe observed (whether anything listens on the port, the HTTP status it returned). That is not proof the page rendered correctly in the dock.',
      input: inputObject(
        {
          path: s.string({
            description:
              'Path on the preview server, starting with "/", e.g. /index.html?x=1#top. No scheme or host, "..", or backslashes.',
            maxLength: 4096,
          }),
          port: s.integer({
            description:
              "TCP port of the server inside the computer to show, e.g. 5173; default the port shown last (at first the profile's preview port).",
            minimum: 1,
            maximum: 65535,
          }),
        },
        ['path'],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const { path } = input;
        const { state, observed, generation } = await manager.preview.navigateAndObserve(
          path,
          ctx.signal,
          input.port,
        );
        // the generation is not part of the answer, so the row is told it here
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
