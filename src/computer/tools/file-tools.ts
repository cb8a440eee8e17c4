/**
 * list_files, read_file, write_file: executed by the guest agent after the policy allowed the
 * path as the guest resolves it. read_file and write_file also serve the `builtin` tool set.
 */
import type { PathResolver, PolicyDecision } from '../../policy/types.js';
import { PaddockError } from '../../shared/errors.js';
import { s } from '../../tools/schema.js';
import type { Tool, ToolContext } from '../../tools/tool.js';
import {
  decodeContent,
  fetchGuestFile,
  listDirectory,
  renderRead,
  writeGuestFile,
  writeGuestFileWithoutLinks,
} from '../files.js';
import type { ComputerManager, ComputerSource } from '../manager.js';
import { checkGuestPath } from '../paths.js';
import { computerTool, guestPathProperty, inputObject, structured } from './common.js';

const PATH_TEXT =
  'Absolute guest path, e.g. /workspace/app.py; no NUL, backslashes, ".", ".." or empty segments.';

const encodingProperty = s.enum(['utf8', 'base64'], {
  description: 'utf8 (default) for text; base64 for exact bytes of binary files.',
});

/**
 * Throws POLICY_DENIED when the path alone decides the refusal (no rule allows it, or a deny rule
 * matches), so a refused call never boots a computer. Symlinks can only narrow that answer.
 */
async function refuseWithoutComputer(
  ctx: ToolContext,
  type: 'file.read' | 'file.write',
  path: string,
): Promise<void> {
  // enforce without resolvers answers a lexical denial at once, with the policy's own error
  if (!ctx.policy.check({ type, path }).allow) await ctx.policy.enforce({ type, path });
}

/**
 * Enforces the policy for a file action with the guest's resolver (or `paths`, which answers
 * through it); returns the path to use.
 */
export async function allowPath(
  manager: ComputerManager,
  ctx: ToolContext,
  type: 'file.read' | 'file.write',
  path: string,
  paths: PathResolver = manager.guestPathResolver(ctx.signal),
): Promise<string> {
  await refuseWithoutComputer(ctx, type, checkGuestPath(path));
  const c = await manager.requireRunning(ctx.signal);
  const decision: PolicyDecision = await ctx.policy.enforce({ type, path }, { paths });
  ctx.notePolicyRule(decision.rule);
  ctx.noteComputer({ generation: c.generation });
  return decision.resolved ?? path;
}

/** A resolver for a path that has no symlink on it: every path is its own canonical path. */
const WITHOUT_LINKS: PathResolver = { realpath: (p) => Promise.resolve(p) };

/**
 * A resolver that answers for `path` with where it led when it was opened (`real`), and asks
 * `guest` about any other path.
 */
function openedAt(guest: PathResolver, path: string, real: string): PathResolver {
  return {
    realpath: (p) => (p === path ? Promise.resolve(real) : guest.realpath(p)),
    ...(guest.readlink ? { readlink: guest.readlink } : {}),
  };
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
      const manager = computers.for(ctx.caller);
      const path = await allowPath(manager, ctx, 'file.read', input.path);
      const c = await manager.requireRunning(ctx.signal);
      const page = await listDirectory(c, path, input.offset ?? 0, input.limit ?? 100);
      return structured({ ...page, path: input.path });
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
        const manager = computers.for(ctx.caller);
        const requested = checkGuestPath(input.path);
        const encoding = input.encoding ?? 'utf8';
        const offset = input.offset ?? 0;
        const byteLimit = input.byteLimit ?? 4096;
        await refuseWithoutComputer(ctx, 'file.read', requested);
        const c = await manager.requireRunning(ctx.signal);
        // The read comes first, and the policy decides on the file it actually opened (named by
        // its descriptor): its bytes are released only if that file is allowed. A read that
        // failed is retried after the policy resolved the path through the guest, for its error.
        const early = await fetchGuestFile(c, requested, offset, byteLimit).then(
          (raw) => raw,
          () => null,
        );
        const guest = manager.guestPathResolver(ctx.signal);
        const allowed = await allowPath(
          manager,
          ctx,
          'file.read',
          requested,
          early ? openedAt(guest, requested, early.realpath) : guest,
        );
        let raw = early;
        if (!raw || raw.realpath !== allowed) {
          raw = await fetchGuestFile(c, allowed, offset, byteLimit);
          if (raw.realpath !== allowed) {
            throw new PaddockError(
              'INVALID_ARGUMENT',
              `${requested} changed while it was being read; read it again.`,
            );
          }
        }
        return structured(renderRead(requested, encoding, offset, raw));
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
        const manager = computers.for(ctx.caller);
        const requested = input.path;
        const encoding = input.encoding ?? 'utf8';
        const bytes = decodeContent(input.content, encoding);
        const overwrite = input.overwrite === true;
        await refuseWithoutComputer(ctx, 'file.write', checkGuestPath(requested));
        const c = await manager.requireRunning(ctx.signal);
        // One round trip when no symlink is on the path: the policy decides on the path as
        // written, and the guest writes only if it walks it without meeting a link (then it is
        // the canonical path). A link met: the policy decides on where it leads, then the write.
        const asWritten = await ctx.policy.enforce(
          { type: 'file.write', path: requested },
          { paths: WITHOUT_LINKS },
        );
        const direct = await writeGuestFileWithoutLinks(c, requested, bytes, overwrite);
        if (direct) {
          ctx.notePolicyRule(asWritten.rule);
          ctx.noteComputer({ generation: c.generation });
          return structured({ ...direct, path: requested });
        }
        const path = await allowPath(manager, ctx, 'file.write', requested);
        const r = await writeGuestFile(c, path, bytes, overwrite);
        return structured({ ...r, path: requested });
      },
    }),
  ];
}
