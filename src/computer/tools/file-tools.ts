/**
 * list_files, read_file, write_file: a lexical policy check on the host (a refused path boots
 * no computer), then one guest call that walks the path within the policy's file scope and acts
 * only on what it reached inside the roots (see guest/scoped-walk.ts). read_file and write_file
 * also serve the `builtin` tool set.
 */
import { s } from '../../tools/schema.js';
import type { Tool, ToolContext } from '../../tools/tool.js';
import { decodeContent, fetchGuestFile, listDirectory, renderRead, writeGuestFile } from '../files.js';
import type { Generation } from '../generation/generation.js';
import type { ComputerSource } from '../manager.js';
import { checkGuestPath } from '../paths.js';
import { computerTool, guestPathProperty, inputObject, structured } from './common.js';

const PATH_TEXT =
  'Absolute guest path, e.g. /workspace/app.py; no NUL, backslashes, ".", ".." or empty segments.';

const encodingProperty = s.enum(['utf8', 'base64'], {
  description: 'utf8 (default) for text; base64 for exact bytes of binary files.',
});

/**
 * The lexical policy check of a file action (POLICY_DENIED when the path alone decides the
 * refusal, so a refused call never boots a computer), then the running computer to act on.
 * Symlinks can only narrow that answer: the guest judges them.
 */
async function admitFile(
  computers: ComputerSource,
  ctx: ToolContext,
  type: 'file.read' | 'file.write',
  path: string,
): Promise<Generation> {
  const checked = checkGuestPath(path);
  if (!ctx.policy.check({ type, path: checked }).allow) await ctx.policy.enforce({ type, path: checked });
  const c = await computers.for(ctx.caller).requireRunning(ctx.signal);
  ctx.noteComputer({ generation: c.generation });
  return c;
}

/** list_files (and, with another name, the `list_dir` built-in). */
export function listFilesTool(
  computers: ComputerSource,
  name = 'list_files',
  toolsets = ['computer'],
  source: Tool['source'] = 'computer',
): Tool {
  return computerTool(computers, {
    name,
    title: 'List a directory',
    kind: 'answer',
    source,
    toolsets,
    description:
      'Lists the entries of a directory inside the computer with their type (file, dir, symlink, other), size in bytes, modification time and permission bits, sorted by name. ' +
      "offset and limit page through a fresh listing each call (not a snapshot), so entries may shift if files change in between. Paths are the computer's, never the host's.",
    input: inputObject(
      {
        path: guestPathProperty(PATH_TEXT),
        offset: s.integer({
          description: 'Entries to skip; default 0.',
          minimum: 0,
          maximum: 2147483647,
        }),
        limit: s.integer({
          description: 'Entries to return; default 100, maximum 500.',
          minimum: 1,
          maximum: 500,
        }),
      },
      ['path'],
    ),
    async execute(input, ctx) {
      const c = await admitFile(computers, ctx, 'file.read', input.path);
      const scope = ctx.policy.fileScope('read');
      const listed = await listDirectory(c, scope, input.path, input.offset ?? 0, input.limit ?? 100);
      ctx.notePolicyRule(listed.rule);
      return structured(listed.page);
    },
  });
}

export function fileTools(computers: ComputerSource): Tool[] {
  return [
    listFilesTool(computers),
    computerTool(computers, {
      name: 'read_file',
      title: 'Read a file',
      kind: 'answer',
      toolsets: ['computer', 'builtin'],
      description:
        'Reads a file inside the computer — source code, configuration, data, results of a command — as UTF-8 text or as base64 bytes. ' +
        'offset and byteLimit count bytes; the answer gives bytesRead, nextOffset and eof, so a large file is read in steps by passing nextOffset back. A text read never stops in the middle of a character. ' +
        "Use base64 for binary files: text mode refuses bytes that are not valid UTF-8. Directories, FIFOs and devices are refused (use list_files for directories). Reads the computer's files only, never the host's.",
      input: inputObject(
        {
          path: guestPathProperty(PATH_TEXT),
          encoding: encodingProperty,
          offset: s.integer({
            description: 'Byte offset to start at; default 0.',
            minimum: 0,
            maximum: 9007199254740991,
          }),
          byteLimit: s.integer({
            description: 'Most bytes to read; default 4096, maximum 65536.',
            minimum: 1,
            maximum: 65536,
          }),
        },
        ['path'],
      ),
      async execute(input, ctx) {
        const encoding = input.encoding ?? 'utf8';
        const offset = input.offset ?? 0;
        const c = await admitFile(computers, ctx, 'file.read', input.path);
        const scope = ctx.policy.fileScope('read');
        const raw = await fetchGuestFile(c, scope, input.path, offset, input.byteLimit ?? 4096);
        ctx.notePolicyRule(raw.rule);
        return structured(renderRead(input.path, encoding, offset, raw));
      },
    }),
    computerTool(computers, {
      name: 'write_file',
      title: 'Write a file',
      kind: 'act',
      toolsets: ['computer', 'builtin'],
      description:
        'Creates or replaces a file inside the computer with UTF-8 text or base64 bytes (at most 65,536 bytes after decoding), to prepare code, configuration or data for programs there. It never writes host files. ' +
        'The parent directory must already exist (create it with run_command "mkdir -p …"). With overwrite=false the file is created only if the path is free, atomically, otherwise FILE_EXISTS and nothing changes; with overwrite=true an existing file is replaced atomically (readers see the old or the new content, never a mix). ' +
        'For larger files, write parts and join them with run_command.',
      input: inputObject(
        {
          path: guestPathProperty(PATH_TEXT),
          content: s.string({
            description: 'The text, or standard base64 when encoding is base64.',
            maxLength: 90000,
          }),
          encoding: encodingProperty,
          overwrite: s.boolean({
            description:
              'Must be given: true allows replacing an existing file, false only creates a new one.',
          }),
        },
        ['path', 'content', 'overwrite'],
      ),
      async execute(input, ctx) {
        const bytes = decodeContent(input.content, input.encoding ?? 'utf8');
        const c = await admitFile(computers, ctx, 'file.write', input.path);
        const scope = ctx.policy.fileScope('write');
        const r = await writeGuestFile(c, scope, input.path, bytes, input.overwrite === true);
        ctx.notePolicyRule(r.rule);
        return structured({ path: input.path, bytesWritten: r.bytesWritten, created: r.created });
      },
    }),
  ];
}
