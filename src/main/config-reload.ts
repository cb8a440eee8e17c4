/**
 * paddock.yaml reloaded while the server runs: on SIGHUP and when the file changes (a watch on
 * its directory, so an editor that replaces the file is seen too). The new text is validated
 * whole first, policy rules compiled included; an invalid edit changes nothing and the log says
 * why, line by line. A valid one puts its `policy` in force for every decision from then on;
 * other sections are read at start only, and the log names those that changed.
 */
import { createHash } from 'node:crypto';
import { type FSWatcher, readFileSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { ConfigError } from '../config/config-error.js';
import { validateConfigText } from '../config/load.js';
import type { PaddockConfig } from '../config/paddock-config.js';
import { compileNetworkAllow } from '../net/egress/decide.js';
import { listPolicyProblems } from '../policy/index.js';
import { isPaddockError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';

/** How a reload ended. */
export type ReloadOutcome = 'reloaded' | 'unchanged' | 'invalid';

export interface ConfigReloadOptions {
  /** The config file (a server on the built-in defaults has none and never reloads). */
  file: string;
  /** The config in force. */
  current: PaddockConfig;
  logger: Logger;
  /** Puts a validated config's policy in force. */
  apply(next: PaddockConfig): Promise<void>;
  /** Quiet time after a change before the file is read (editors write in several steps). */
  debounceMs?: number;
}

/** Watches paddock.yaml and SIGHUP; see the file's comment. */
export class ConfigReloader {
  private watcher: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private digest: string;
  private current: PaddockConfig;
  private running: Promise<ReloadOutcome> = Promise.resolve('unchanged');
  private readonly onSignal = () => void this.reload('signal');

  constructor(private readonly options: ConfigReloadOptions) {
    this.current = options.current;
    this.digest = this.read()?.digest ?? '';
  }

  /** Starts watching the file and listening for SIGHUP. */
  start(): void {
    const name = basename(this.options.file);
    try {
      this.watcher = watch(dirname(this.options.file), (_event, changed) => {
        if (changed !== null && changed.toString() !== name) return;
        if (this.timer) clearTimeout(this.timer);
        this.timer = setTimeout(() => void this.reload('file'), this.options.debounceMs ?? 200);
        this.timer.unref();
      });
      this.watcher.on('error', () => undefined);
    } catch (e) {
      this.options.logger.warn('config.watch_failed', {
        file: this.options.file,
        error: (e as Error).message,
      });
    }
    process.on('SIGHUP', this.onSignal);
  }

  /** Reads, validates and applies the file now (reloads run one at a time). */
  reload(reason: 'signal' | 'file' | 'request'): Promise<ReloadOutcome> {
    this.running = this.running.then(() => this.reloadNow(reason));
    return this.running;
  }

  close(): void {
    process.off('SIGHUP', this.onSignal);
    this.watcher?.close();
    if (this.timer) clearTimeout(this.timer);
  }

  private read(): { text: string; digest: string } | null {
    try {
      const text = readFileSync(this.options.file, 'utf8');
      return { text, digest: createHash('sha256').update(text).digest('hex') };
    } catch {
      return null;
    }
  }

  private async reloadNow(reason: 'signal' | 'file' | 'request'): Promise<ReloadOutcome> {
    const { logger, file } = this.options;
    const read = this.read();
    if (!read) {
      logger.error('config.reload_failed', {
        file,
        reason,
        problems: ['(file): cannot be read; the running configuration stays in force'],
      });
      return 'invalid';
    }
    if (read.digest === this.digest && reason === 'file') return 'unchanged';
    let next: PaddockConfig;
    try {
      next = validateConfigText(file, read.text);
      const problems = listPolicyProblems(next.policy);
      for (const [i, profile] of next.computer.profiles.entries()) {
        try {
          compileNetworkAllow(profile.network.allow);
        } catch (e) {
          problems.push(`computer.profiles.${i}.network.allow: ${(e as Error).message}`);
        }
      }
      if (problems.length > 0) throw new ConfigError(file, problems);
    } catch (e) {
      const problems = e instanceof ConfigError ? e.problems : [isPaddockError(e) ? e.message : String(e)];
      logger.error('config.reload_failed', { file, reason, problems, kept: 'the running configuration' });
      this.digest = read.digest;
      return 'invalid';
    }
    this.digest = read.digest;
    const restart = Object.keys(next).filter(
      (key) =>
        key !== 'policy' &&
        JSON.stringify(next[key as keyof PaddockConfig]) !==
          JSON.stringify(this.current[key as keyof PaddockConfig]),
    );
    if (JSON.stringify(next.policy.http.inject) !== JSON.stringify(this.current.policy.http.inject)) {
      restart.push('policy.http.inject');
    }
    const policyChanged = JSON.stringify(next.policy) !== JSON.stringify(this.current.policy);
    if (policyChanged) await this.options.apply(next);
    this.current = { ...this.current, policy: next.policy };
    logger.info('config.reloaded', { file, reason, policy: policyChanged ? 'changed' : 'unchanged' });
    if (restart.length > 0) {
      logger.warn('config.restart_needed', {
        file,
        sections: restart,
        message: `changes to ${restart.join(', ')} take effect when the server restarts; policy changes are in force now`,
      });
    }
    return policyChanged ? 'reloaded' : 'unchanged';
  }
}
