import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { requireCjs } from '../shared/require-cjs.js';
import { ConfigError } from './config-error.js';
import { explainIssue } from './config-hints.js';
import { type LocateOptions, locateConfig } from './locate.js';
import { type PaddockConfig, paddockConfigSchema } from './paddock-config.js';

const { parseDocument } = requireCjs('yaml') as typeof import('yaml');

export { ConfigError };

export interface LoadedConfig {
  config: PaddockConfig;
  /** The file read, or undefined when the built-in defaults apply. */
  file?: string;
  /** Directory holding `.paddock/` (the config file's directory, else the working directory). */
  projectDir: string;
  dataDir: string;
}

export type LoadOptions = LocateOptions;

/**
 * Finds and validates paddock.yaml: `--config`, then `PADDOCK_CONFIG`, then
 * `./paddock.yaml`. A missing file (when none was named) means the built-in defaults; a
 * named file that is missing, or any invalid file, is an error — never a silent fallback.
 */
export function loadConfig(options: LoadOptions = {}): LoadedConfig {
  const { file, missing, projectDir, dataDir } = locateConfig(options);
  if (missing) throw missingConfig(missing);
  const config = validateConfigText(file, file ? readFileSync(file, 'utf8') : undefined);
  return { config, ...(file ? { file } : {}), projectDir, dataDir };
}

/** The error for a config file named by `--config` or `PADDOCK_CONFIG` that does not exist. */
export function missingConfig(file: string): ConfigError {
  return new ConfigError(file, [`(file): not found; create it with \`paddock init\` or fix the path`]);
}

/** Validates the text of paddock.yaml (`file` undefined: the built-in defaults). */
export function validateConfigText(file: string | undefined, text: string | undefined): PaddockConfig {
  const raw = file && text !== undefined ? parseYaml(file, text) : {};
  const config = validate(paddockConfigSchema, raw ?? {}, file ?? '(defaults)');
  if (config.server.auth === 'none' && !isLoopbackHost(config.server.host)) {
    throw new ConfigError(file ?? '(defaults)', [
      `server.auth: "none" is only allowed when server.host is a loopback address (got "${config.server.host}")`,
    ]);
  }
  return config;
}

/** Parses YAML, turning syntax errors into `line:col: message` problems. */
export function parseYaml(file: string, text: string): unknown {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      file,
      doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        return `${pos ? `line ${pos.line}, column ${pos.col}` : '(yaml)'}: ${e.message.split('\n')[0]}`;
      }),
    );
  }
  return doc.toJS();
}

/**
 * Validates with zod, reporting every problem at once: one `path: what is wrong` line each, in
 * words, with a suggestion and the YAML to write where one applies (config-hints.ts).
 */
export function validate<T extends z.ZodType>(schema: T, value: unknown, file: string): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new ConfigError(
    file,
    parsed.error.issues.flatMap((issue) => explainIssue(issue, schema, value).split(/\n(?=\S)/)),
  );
}

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}
