import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { SKILL_KEYS, skillFrontmatterSchema } from './agent-schema.js';
import { describeIssues, parseFrontmatter } from './frontmatter.js';
import type { SkillDefinition } from './types.js';

/** Files beside SKILL.md that are listed (the rest are still in the directory). */
export const MAX_LISTED_SKILL_FILES = 200;
/** Largest SKILL.md read, in bytes. */
export const MAX_SKILL_BYTES = 256 * 1024;

/** A loaded skill, or the problems of its SKILL.md. */
export type SkillResult =
  | { ok: true; skill: SkillDefinition }
  | { ok: false; file: string; problems: string[] };

/**
 * Loads `<skillsDir>/<name>/SKILL.md` (Agent Skills format): frontmatter `name` (equal to the
 * directory name), `description`, optional `license`, `compatibility`, `metadata` and
 * `allowed-tools`; the body holds the instructions. Unknown keys are problems.
 */
export function loadSkill(skillsDir: string, name: string): SkillResult {
  const dir = join(skillsDir, name);
  const file = join(dir, 'SKILL.md');
  if (!existsSync(file)) {
    const known = listSkillNames(skillsDir);
    return {
      ok: false,
      file,
      problems: [
        `(file): there is no skill "${name}" (${file} is missing); create it or use one of: ${known.length ? known.join(', ') : '(no skills yet)'}`,
      ],
    };
  }
  let text: string;
  try {
    if (statSync(file).size > MAX_SKILL_BYTES) {
      return {
        ok: false,
        file,
        problems: [
          `(file): SKILL.md is larger than ${MAX_SKILL_BYTES} bytes; move details into files beside it`,
        ],
      };
    }
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return {
      ok: false,
      file,
      problems: [`(file): cannot be read (${(e as NodeJS.ErrnoException).code}); check its permissions`],
    };
  }
  const parsed = parseFrontmatter(text, 'SKILL.md');
  if (!parsed.ok) return { ok: false, file, problems: parsed.problems };
  const fm = skillFrontmatterSchema.safeParse(parsed.data);
  if (!fm.success) return { ok: false, file, problems: describeIssues(fm.error, SKILL_KEYS) };
  if (fm.data.name !== name) {
    return {
      ok: false,
      file,
      problems: [`name: "${fm.data.name}" must equal the directory name "${name}"; rename one of them`],
    };
  }
  if (!parsed.body) {
    return {
      ok: false,
      file,
      problems: ['(body): the instructions are empty; write them below the frontmatter'],
    };
  }
  return {
    ok: true,
    skill: {
      name,
      description: fm.data.description,
      allowedTools: fm.data['allowed-tools'] ?? [],
      ...(fm.data.license ? { license: fm.data.license } : {}),
      ...(fm.data.compatibility ? { compatibility: fm.data.compatibility } : {}),
      metadata: fm.data.metadata ?? {},
      instructions: parsed.body,
      dir,
      file,
      files: listFiles(dir).filter((f) => f !== 'SKILL.md'),
    },
  };
}

/** Directory names under the skills directory that hold a SKILL.md, sorted. */
export function listSkillNames(skillsDir: string): string[] {
  if (!existsSync(skillsDir)) return [];
  return readdirSync(skillsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(skillsDir, d.name, 'SKILL.md')))
    .map((d) => d.name)
    .sort();
}

/** Regular files under `dir`, relative, depth-first, at most MAX_LISTED_SKILL_FILES + 1 (symlinks are not followed). */
function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, depth: number) => {
    if (depth > 6 || out.length > MAX_LISTED_SKILL_FILES) return;
    for (const entry of readdirSync(d, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      if (out.length > MAX_LISTED_SKILL_FILES) return;
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path, depth + 1);
      else if (entry.isFile()) out.push(relative(dir, path));
    }
  };
  try {
    walk(dir, 0);
  } catch {
    // an unreadable subdirectory only shortens the listing
  }
  return out.slice(0, MAX_LISTED_SKILL_FILES);
}
