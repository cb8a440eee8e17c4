import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { RunLimits } from '../config/agents-schema.js';
import type { PolicyConfig } from '../config/schema.js';
import type { Sandbox } from '../policy/types.js';
import { isPaddockError } from '../shared/errors.js';
import { AGENT_KEYS, type AgentFrontmatter, agentFrontmatterSchema } from './agent-schema.js';
import { describeIssues, parseFrontmatter } from './frontmatter.js';
import { buildAgentSandbox } from './policy-narrowing.js';
import { parseSchedules } from './schedules.js';
import { loadSkill } from './skills.js';
import { compileToolFilter, matcher } from './tool-filter.js';
import type { AgentDefinition, AgentLoadError, SkillDefinition } from './types.js';

/** Largest AGENT.md read, in bytes. */
export const MAX_AGENT_BYTES = 256 * 1024;

/** What an AGENT.md is checked against. */
export interface AgentLoadContext {
  /** Directory holding `.paddock/`. */
  projectDir: string;
  /** Servers of mcp_servers.yaml and their state (`disabled` ones are accepted with a warning). */
  servers: readonly { name: string; state: string }[];
  /** Channel names of paddock.yaml `notify`. */
  channels: readonly string[];
  /** Provider names and their default models. */
  providers: ReadonlyMap<string, { model?: string | undefined }>;
  defaultProvider?: string | undefined;
  globalPolicy: Sandbox;
  globalPolicyConfig: PolicyConfig;
  /** Default budgets (paddock.yaml `agents.limits`). */
  limits: RunLimits;
}

/** Every agent of a project: the loaded ones and, separately, the ones with problems. */
export interface LoadedAgents {
  agents: AgentDefinition[];
  errors: AgentLoadError[];
}

/** `.paddock/agents` of a project. */
export function agentsDir(projectDir: string): string {
  return join(projectDir, '.paddock', 'agents');
}

/** `.paddock/skills` of a project. */
export function skillsDir(projectDir: string): string {
  return join(projectDir, '.paddock', 'skills');
}

/**
 * Loads every `.paddock/agents/<name>/AGENT.md`. Each agent is checked on its own: a bad one
 * becomes an {@link AgentLoadError} (file plus one `key: message` line per problem) and never
 * stops the others. Never throws for the content of a file.
 */
export function loadAgents(ctx: AgentLoadContext): LoadedAgents {
  const root = agentsDir(ctx.projectDir);
  const result: LoadedAgents = { agents: [], errors: [] };
  if (!existsSync(root)) return result;
  const dirs = readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
    .map((d) => d.name)
    .sort();
  const skills = new Map<string, ReturnType<typeof loadSkill>>();
  for (const name of dirs) {
    const file = join(root, name, 'AGENT.md');
    const loaded = loadAgent(name, file, ctx, skills);
    if ('problems' in loaded) result.errors.push({ agent: name, file, problems: loaded.problems });
    else result.agents.push(loaded);
  }
  return result;
}

function loadAgent(
  dirName: string,
  file: string,
  ctx: AgentLoadContext,
  skillCache: Map<string, ReturnType<typeof loadSkill>>,
): AgentDefinition | { problems: string[] } {
  if (!existsSync(file)) {
    return { problems: ['(file): AGENT.md is missing; add one, or remove the directory'] };
  }
  let text: string;
  try {
    if (statSync(file).size > MAX_AGENT_BYTES) {
      return {
        problems: [
          `(file): AGENT.md is larger than ${MAX_AGENT_BYTES} bytes; shorten the task or move details into a skill`,
        ],
      };
    }
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return {
      problems: [`(file): cannot be read (${(e as NodeJS.ErrnoException).code}); check its permissions`],
    };
  }
  const parsed = parseFrontmatter(text, 'AGENT.md');
  if (!parsed.ok) return { problems: parsed.problems };
  const fm = agentFrontmatterSchema.safeParse(parsed.data);
  if (!fm.success) return { problems: describeIssues(fm.error, AGENT_KEYS) };
  return buildDefinition(dirName, file, fm.data, parsed.body, ctx, skillCache);
}

function buildDefinition(
  dirName: string,
  file: string,
  fm: AgentFrontmatter,
  body: string,
  ctx: AgentLoadContext,
  skillCache: Map<string, ReturnType<typeof loadSkill>>,
): AgentDefinition | { problems: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  if (fm.name !== dirName)
    problems.push(`name: "${fm.name}" must equal the directory name "${dirName}"; rename one of them`);
  if (!body) problems.push('(body): the task is empty; describe it in markdown below the frontmatter');
  if (fm.mcp_servers && fm.mcpServers) {
    problems.push('mcpServers: give the servers once, as mcp_servers or as mcpServers, not both');
  }

  const provider = fm.provider ?? ctx.defaultProvider;
  const known = [...ctx.providers.keys()].sort().join(', ');
  let model = fm.model;
  if (!provider) {
    problems.push(`provider: missing; name one of: ${known} (or set agents.defaultProvider in paddock.yaml)`);
  } else if (!ctx.providers.has(provider)) {
    problems.push(
      `provider: unknown provider "${provider}"; use one of: ${known}, or add it under agents.providers in paddock.yaml`,
    );
  } else {
    model ??= ctx.providers.get(provider)?.model;
    if (!model)
      problems.push(`model: missing; set it here or as agents.providers.${provider}.model in paddock.yaml`);
  }

  const mcpServers = fm.mcp_servers ?? fm.mcpServers ?? [];
  const key = fm.mcp_servers ? 'mcp_servers' : 'mcpServers';
  mcpServers.forEach((server, i) => {
    const found = ctx.servers.find((s) => s.name === server);
    if (!found) {
      const names = ctx.servers.map((s) => s.name);
      problems.push(
        `${key}.${i}: unknown server "${server}"; ${names.length ? `mcp_servers.yaml has: ${names.join(', ')}` : 'add it to .paddock/mcp_servers.yaml'}`,
      );
    } else if (found.state === 'disabled') {
      warnings.push(
        `${key}.${i}: server "${server}" is disabled in mcp_servers.yaml, so its tools are not available`,
      );
    }
  });

  (fm.notify ?? []).forEach((channel, i) => {
    if (!ctx.channels.includes(channel)) {
      problems.push(
        `notify.${i}: unknown channel "${channel}"; ${ctx.channels.length ? `use one of: ${ctx.channels.join(', ')}` : 'add it under notify.channels in paddock.yaml'}`,
      );
    }
  });

  const skills: SkillDefinition[] = [];
  (fm.skills ?? []).forEach((name, i) => {
    let loaded = skillCache.get(name);
    if (!loaded) {
      loaded = loadSkill(join(ctx.projectDir, '.paddock', 'skills'), name);
      skillCache.set(name, loaded);
    }
    if (loaded.ok) skills.push(loaded.skill);
    else problems.push(...loaded.problems.map((p) => `skills.${i} (${loaded.file}) ${p}`));
  });

  const entries =
    fm.schedules === undefined ? [] : Array.isArray(fm.schedules) ? fm.schedules : [fm.schedules];
  const schedules = parseSchedules(entries);
  problems.push(...schedules.problems);

  let sandbox = ctx.globalPolicy;
  let policyConfig: PolicyConfig | undefined;
  if (fm.policy) {
    try {
      const built = buildAgentSandbox(ctx.globalPolicy, ctx.globalPolicyConfig, fm.policy);
      sandbox = built.sandbox;
      policyConfig = built.config;
      warnings.push(...built.warnings);
    } catch (e) {
      if (!isPaddockError(e)) throw e;
      problems.push(`policy: ${e.message}`);
    }
  }

  const spec = {
    ...(fm.tools ? { tools: fm.tools } : {}),
    disallowedTools: fm.disallowedTools ?? [],
    mcpServers,
  };
  const listed = spec.tools ? matcher(spec.tools) : () => true;
  const refused = matcher(spec.disallowedTools);
  for (const skill of skills) {
    const missing = skill.allowedTools.filter((t) => !listed(t) || refused(t));
    if (missing.length > 0) {
      warnings.push(`skills: "${skill.name}" expects ${missing.join(', ')}, which this agent does not allow`);
    }
  }

  if (problems.length > 0) return { problems };
  return {
    name: fm.name,
    description: fm.description,
    instructions: body,
    file,
    dir: join(file, '..'),
    provider: provider!,
    model: model!,
    ...spec,
    skills,
    schedules: schedules.schedules,
    notify: fm.notify ?? [],
    ...(fm.computer ? { computer: fm.computer } : {}),
    limits: { ...ctx.limits, ...fm.limits },
    ...(fm.approvals ? { approvalWaitMs: fm.approvals.wait } : {}),
    ...(fm.catchUp !== undefined ? { catchUp: fm.catchUp } : {}),
    ...(policyConfig ? { policyConfig } : {}),
    sandbox,
    allowTool: compileToolFilter(spec),
    warnings,
  };
}
