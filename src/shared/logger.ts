/** Log levels, in increasing severity. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const SEVERITY: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A structured logger. Events are named `domain.verb` (the names the audit table uses). */
export interface Logger {
  debug(event: string, fields?: Record<string, unknown>): void;
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  error(event: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go; stderr by default (stdout belongs to the stdio MCP server). */
  write?: (line: string) => void;
  json?: boolean;
}

/** Logger writing one line per event to stderr (JSON or `key=value`). */
export function createLogger(options: LoggerOptions = {}, base: Record<string, unknown> = {}): Logger {
  const min = SEVERITY[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const emit = (level: LogLevel, event: string, fields: Record<string, unknown> = {}) => {
    if (SEVERITY[level] < min) return;
    const record = { ts: new Date().toISOString(), level, event, ...base, ...fields };
    if (options.json) {
      write(JSON.stringify(record));
      return;
    }
    const rest = Object.entries({ ...base, ...fields })
      .map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v ?? null)}`)
      .join(' ');
    write(`${record.ts} ${level.padEnd(5)} ${event}${rest ? ` ${rest}` : ''}`);
  };
  return {
    debug: (e, f) => emit('debug', e, f),
    info: (e, f) => emit('info', e, f),
    warn: (e, f) => emit('warn', e, f),
    error: (e, f) => emit('error', e, f),
    child: (fields) => createLogger(options, { ...base, ...fields }),
  };
}

/** A logger that drops everything (for tests and benchmarks). */
export function silentLogger(): Logger {
  const l: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => l };
  return l;
}
