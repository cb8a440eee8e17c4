/**
 * The agents of a project as loaded from `.paddock/agents/<name>/AGENT.md`: the ones that load,
 * the ones that did not (with their problems), and lookup by name with an error that says what
 * to do.
 */
import type { AgentsConfig, ProviderConfig } from '../config/agents-schema.js';
import type { PolicyConfig } from '../config/schema.js';
import type { Sandbox } from '../policy/types.js';
import { PaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { type LoadedAgents, loadAgents } from './load-agents.js';

import type { AgentDefinition, AgentLoadError } from './types.js';

/** What loading reads besides the agent files. */
export interface CatalogSources {
  projectDir: string;
  servers(): { name: string; state: string }[];
  channelNames(): string[];
  providers: ReadonlyMap<string, ProviderConfig>;
  config: AgentsConfig;
  policy: Sandbox;
  policyConfig: PolicyConfig;
  logger: Logger;
}

/** The loaded agents; `load()` re-reads them (bad ones are logged as `agent.load_failed`). */
export class AgentCatalog {
  private loaded: LoadedAgents = { agents: [], errors: [] };

  constructor(private readonly sources: CatalogSources) {}

  load(): void {
    const { sources } = this;
    this.loaded = loadAgents({
      projectDir: sources.projectDir,
      servers: sources.servers(),
      channels: sources.channelNames(),
      providers: sources.providers,
      defaultProvider: sources.config.defaultProvider,
      globalPolicy: sources.policy,
      globalPolicyConfig: sources.policyConfig,
      limits: sources.config.limits,
    });
    const { logger } = sources;
    for (const e of this.loaded.errors)
      logger.error('agent.load_failed', { agent: e.agent, file: e.file, problems: e.problems });
    for (const a of this.loaded.agents)
      for (const w of a.warnings) logger.warn('agent.load_warning', { agent: a.name, warning: w });
  }

  get agents(): readonly AgentDefinition[] {
    return this.loaded.agents;
  }

  get errors(): readonly AgentLoadError[] {
    return this.loaded.errors;
  }

  /** The agent `name`; INVALID_ARGUMENT with its problems when it did not load, else NOT_FOUND. */
  find(name: string): AgentDefinition {
    const agent = this.loaded.agents.find((a) => a.name === name);
    if (agent) return agent;
    const broken = this.loaded.errors.find((e) => e.agent === name);
    if (broken) {
      throw new PaddockError(
        'INVALID_ARGUMENT',
        `Agent "${name}" did not load (${broken.file}):\n${broken.problems.map((p) => `  ${p}`).join('\n')}`,
        { problems: broken.problems },
      );
    }
    const names = this.loaded.agents.map((a) => a.name);
    throw new PaddockError(
      'NOT_FOUND',
      `There is no agent "${name}"; ${names.length ? `use one of: ${names.join(', ')}` : `create .paddock/agents/${name}/AGENT.md`}.`,
    );
  }
}
