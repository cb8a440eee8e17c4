/**
 * list_profiles, launch_computer, get_computer_status.
 */
import { s } from '../../tools/schema.js';
import type { Tool } from '../../tools/tool.js';
import type { ComputerSource } from '../manager.js';
import { computerTool, inputObject, requestIdProperty, structured } from './common.js';

export function lifecycleTools(computers: ComputerSource): Tool[] {
  return [
    computerTool(computers, {
      name: 'list_profiles',
      title: 'List computer profiles',
      kind: 'answer',
      description:
        'Lists the environments a computer can be started from: each profile has a stable id, a name, a description, and whether it is available on this server (with the reason when not). ' +
        'A profile with an image of its own says what it holds (its system, its size, and whether commands run as root, who can install packages with apt-get, pip or npm); an image not built yet makes the profile unavailable, and the reason names the command a person runs to build it. ' +
        'The computer is an isolated Linux machine for running code, editing files and serving web apps without touching the host; a person watching the dock shares it with you. ' +
        'Pass a profile id to launch_computer or create_launch_link. To see what is running now, call get_computer_status instead.',
      input: inputObject(
        {
          search: s.string({
            description: 'Optional text to look for in profile names and descriptions, ignoring case.',
            maxLength: 256,
          }),
        },
        [],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const profiles = computers.listProfiles(input.search);
        return structured({ profiles, defaultProfile: manager.status().profileId ?? null });
      },
    }),
    computerTool(computers, {
      name: 'launch_computer',
      idempotent: true,
      title: 'Launch the computer',
      kind: 'act',
      description:
        'Starts a fresh computer from a profile of list_profiles and makes it the current one. Any computer already running is replaced: all of its processes are killed and its job ids stop working. ' +
        'Answers at once with the generation number and the dock URL where a person can watch; the machine then boots in place. ' +
        'Poll get_computer_status until lifecycle is running or error before using other tools. Do not call this again just because the boot is slow, and never relaunch without checking status first: a relaunch throws away the running work. ' +
        'A launch while a computer is still booting is refused. ' +
        'A relaunch deletes the /workspace of the computer it replaces unless its profile keeps workspaces; pass keepWorkspace: true to carry the files over (the answer says what happened in previousWorkspace).',
      input: inputObject(
        {
          profileId: s.string({
            description: 'A profile id from list_profiles, e.g. "shell".',
            maxLength: 128,
          }),
          keepWorkspace: s.boolean({
            description:
              'Copy the /workspace of the computer being replaced into the new one instead of deleting it. Default false.',
          }),
          requestId: requestIdProperty,
        },
        ['profileId'],
      ),
      async execute(input, ctx) {
        const manager = computers.for(ctx.caller);
        const { profileId } = input;
        const keep = input.keepWorkspace ? { keepWorkspace: true } : {};
        return structured(await manager.launch(profileId, undefined, keep));
      },
    }),
    computerTool(computers, {
      name: 'get_computer_status',
      title: 'Computer status',
      kind: 'answer',
      description:
        'Tells you what the current computer can do right now: generation, profile, lifecycle (booting, running, error, stopped; none before the first launch), the boot error if any, capabilities, resource limits, the active terminal and the preview state. ' +
        'Commands and file operations of the computer tools act inside this machine, never on the host. Check that lifecycle is running and that the capability you need is listed before running commands or touching files. ' +
        'Use list_profiles to discover other environments. A person may be using the same computer through the dock.',
      input: inputObject({}, []),
      async execute(_input, ctx) {
        const manager = computers.for(ctx.caller);
        return structured(manager.status());
      },
    }),
  ];
}
