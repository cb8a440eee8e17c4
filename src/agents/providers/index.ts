import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AgentsConfig, ProviderConfig } from '../../config/agents-schema.js';
import { PaddockError } from '../../shared/errors.js';
import { createAnthropicProvider } from './anthropic.js';
import { createOpenAiProvider } from './openai.js';
import type { ModelProvider } from './types.js';

export { ANTHROPIC_VERSION, createAnthropicProvider } from './anthropic.js';
export { postJson, retryAfterMs } from './http.js';
export { createOpenAiProvider } from './openai.js';
export * from './types.js';

/** `max_tokens` of an anthropic call when the provider sets none. */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 4096;

const BASE = { keyRequired: true, headers: {}, timeoutMs: 120_000, maxRetries: 3 } as const;

/** The vendor endpoint of each wire format (used when neither `baseUrl` nor the environment names one). */
export const DEFAULT_BASE_URLS = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
} as const;

/** The providers that exist without configuration. */
export const BUILTIN_PROVIDERS: Readonly<Record<string, ProviderConfig>> = {
  openai: { ...BASE, type: 'openai', apiKeyEnv: 'OPENAI_API_KEY' },
  anthropic: { ...BASE, type: 'anthropic', apiKeyEnv: 'ANTHROPIC_API_KEY' },
};

/** Every provider by name: the built-ins, replaced or extended by paddock.yaml `agents.providers`. */
export function providerConfigs(config: Pick<AgentsConfig, 'providers'>): Map<string, ProviderConfig> {
  return new Map(Object.entries({ ...BUILTIN_PROVIDERS, ...config.providers }));
}

/** Where a provider's key comes from. */
export interface KeySources {
  env: NodeJS.ProcessEnv;
  dataDir: string;
}

/** The key of a provider and, without one, what the operator should do. */
export interface ResolvedKey {
  key?: string;
  source: 'env' | 'file' | 'none';
  /** e.g. "set ANTHROPIC_API_KEY or write the key to <dataDir>/keys/anthropic". */
  hint: string;
}

function defaultEnv(config: ProviderConfig): string {
  return config.apiKeyEnv ?? (config.type === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY');
}

/**
 * The API key of a provider: the environment variable (`apiKeyEnv`, default by type), else the
 * key file in the data directory (`apiKeyFile`, default `keys/<name>`). Keys never come from
 * an AGENT.md and are never handed to tools or the computer.
 */
export function resolveApiKey(name: string, config: ProviderConfig, sources: KeySources): ResolvedKey {
  const envName = defaultEnv(config);
  const file = resolve(sources.dataDir, config.apiKeyFile ?? join('keys', name));
  const hint = `set ${envName} or write the key to ${file} (mode 0600)`;
  const fromEnv = sources.env[envName]?.trim();
  if (fromEnv) return { key: fromEnv, source: 'env', hint };
  try {
    const fromFile = readFileSync(file, 'utf8').trim();
    if (fromFile) return { key: fromFile, source: 'file', hint };
  } catch {
    // no key file
  }
  return { source: 'none', hint };
}

/** Variables that move a provider without `baseUrl` elsewhere, as the vendors' SDKs read them. */
export const BASE_URL_ENV = { openai: 'OPENAI_BASE_URL', anthropic: 'ANTHROPIC_BASE_URL' } as const;

function envBaseUrl(type: ProviderConfig['type'], env: NodeJS.ProcessEnv): string | undefined {
  const value = env[BASE_URL_ENV[type]]?.trim();
  if (!value) return undefined;
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return value;
  } catch {
    // not a URL
  }
  throw new PaddockError(
    'INVALID_ARGUMENT',
    `${BASE_URL_ENV[type]} is set to "${value}", which is not an http(s) URL; fix or unset it.`,
  );
}

/** Options of {@link createProvider}. */
export interface CreateProviderOptions extends KeySources {
  onRetry?: (info: { attempt: number; status?: number; delayMs: number; reason: string }) => void;
}

/**
 * Builds the provider for one run. The endpoint is `baseUrl`, else OPENAI_BASE_URL /
 * ANTHROPIC_BASE_URL from the environment, else the vendor API. Throws PaddockError
 * INVALID_ARGUMENT for an unknown provider and UPSTREAM_ERROR when a key is required but
 * missing (naming the variable and file to set).
 */
export function createProvider(
  name: string,
  model: string,
  configs: ReadonlyMap<string, ProviderConfig>,
  options: CreateProviderOptions,
): ModelProvider {
  const config = configs.get(name);
  if (!config) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `There is no provider "${name}"; use one of ${[...configs.keys()].join(', ')} or add it under agents.providers in paddock.yaml.`,
    );
  }
  const key = resolveApiKey(name, config, options);
  if (!key.key && config.keyRequired) {
    throw new PaddockError('UPSTREAM_ERROR', `Provider "${name}" has no API key: ${key.hint}.`, {
      reason: 'missing_key',
    });
  }
  const common = {
    name,
    model,
    headers: config.headers,
    timeoutMs: config.timeoutMs,
    maxRetries: config.maxRetries,
    keyHint: `check the key (${key.hint})`,
    ...(key.key ? { apiKey: key.key } : {}),
    ...(options.onRetry ? { onRetry: options.onRetry } : {}),
  };
  const baseUrl = config.baseUrl ?? envBaseUrl(config.type, options.env) ?? DEFAULT_BASE_URLS[config.type];
  if (config.type === 'anthropic') {
    return createAnthropicProvider({
      ...common,
      baseUrl,
      maxOutputTokens: config.maxOutputTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
    });
  }
  return createOpenAiProvider({
    ...common,
    baseUrl,
    ...(config.maxOutputTokens !== undefined ? { maxOutputTokens: config.maxOutputTokens } : {}),
  });
}
