import { mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { NotifyChannel, NotifyConfig } from '../config/notify-schema.js';
import type { Sandbox } from '../policy/types.js';
import { PaddockError } from '../shared/errors.js';
import { createLogger, type Logger } from '../shared/logger.js';
import type { HopDecision, HttpClient } from './http-client.js';

/** Largest message, in bytes. */
export const MAX_NOTIFY_MESSAGE_BYTES = 16 * 1024;
/** Largest `data` object, in bytes of JSON. */
export const MAX_NOTIFY_DATA_BYTES = 64 * 1024;
const WEBHOOK_TIMEOUT_MS = 15_000;
const WEBHOOK_REPLY_BYTES = 64 * 1024;

/** What is sent. */
export interface NotifyPayload {
  message: string;
  title?: string;
  data?: Record<string, unknown>;
}

/** The bounds of one send (a ToolContext fits). */
export interface NotifyContext {
  /** Checks webhook and Slack destinations, including every redirect. */
  policy: Sandbox;
  signal?: AbortSignal;
  /** Absolute deadline, epoch milliseconds. */
  deadline?: number;
  /** Used by `log` channels; the notifier's own logger otherwise. */
  logger?: Logger;
  onPolicyDecision?: (decision: HopDecision) => void;
}

/** Proof of delivery. */
export interface NotifyReceipt {
  channel: string;
  type: NotifyChannel['type'];
  /** ISO 8601 time the notification was sent. */
  sentAt: string;
  /** HTTP status of the webhook's answer (webhook and slack). */
  status?: number;
}

/** Delivers notifications to the named channels of the configuration. */
export interface Notifier {
  /** Configured channel names, sorted. */
  channelNames(): string[];
  /** Sends to one channel; throws NOT_FOUND for an unknown channel, UPSTREAM_ERROR when delivery fails. */
  send(channel: string, payload: NotifyPayload, ctx: NotifyContext): Promise<NotifyReceipt>;
}

/** What a notifier is built from. */
export interface NotifierOptions {
  config: NotifyConfig;
  /** Carries webhook and Slack posts (and applies the domain policy to them). */
  http: HttpClient;
  logger?: Logger;
  /** Clock, for tests. */
  now?: () => Date;
}

/** Builds the notifier for the configured channels. */
export function createNotifier(options: NotifierOptions): Notifier {
  const channels = new Map(Object.entries(options.config.channels));
  const names = [...channels.keys()].sort();
  const baseLogger = options.logger ?? createLogger();
  const now = options.now ?? (() => new Date());

  return {
    channelNames: () => [...names],
    async send(name, payload, ctx) {
      const channel = channels.get(name);
      if (!channel) {
        throw new PaddockError(
          'NOT_FOUND',
          names.length
            ? `There is no notification channel "${name}"; use one of: ${names.join(', ')}.`
            : `There is no notification channel "${name}" because none is configured; an operator can add one under notify.channels in paddock.yaml.`,
          { channels: names },
        );
      }
      checkSize(payload);
      const sentAt = now().toISOString();
      const receipt: NotifyReceipt = { channel: name, type: channel.type, sentAt };
      switch (channel.type) {
        case 'log':
          (ctx.logger ?? baseLogger).info('notify.sent', { channel: name, ...payload, sentAt });
          return receipt;
        case 'file':
          await appendLine(channel.path, { channel: name, ...payload, sentAt });
          return receipt;
        case 'webhook':
        case 'slack': {
          const body =
            channel.type === 'slack'
              ? { text: slackText(payload) }
              : {
                  title: payload.title ?? null,
                  message: payload.message,
                  data: payload.data ?? null,
                  sentAt,
                };
          const status = await post(options.http, name, channel.url, channel.headers ?? {}, body, ctx);
          return { ...receipt, status };
        }
      }
    },
  };
}

function checkSize(payload: NotifyPayload): void {
  const messageBytes = Buffer.byteLength(payload.message, 'utf8');
  if (messageBytes > MAX_NOTIFY_MESSAGE_BYTES) {
    throw new PaddockError(
      'LIMIT_EXCEEDED',
      `The message is ${messageBytes} bytes; the limit is ${MAX_NOTIFY_MESSAGE_BYTES}. Shorten it or send a link instead.`,
    );
  }
  if (payload.data !== undefined) {
    const dataBytes = Buffer.byteLength(JSON.stringify(payload.data), 'utf8');
    if (dataBytes > MAX_NOTIFY_DATA_BYTES) {
      throw new PaddockError(
        'LIMIT_EXCEEDED',
        `data is ${dataBytes} bytes of JSON; the limit is ${MAX_NOTIFY_DATA_BYTES}. Send fewer fields.`,
      );
    }
  }
}

/** Slack's `text`: a bold title line, the message, and data as a JSON code block. */
function slackText(payload: NotifyPayload): string {
  const parts = [];
  if (payload.title) parts.push(`*${payload.title}*`);
  parts.push(payload.message);
  if (payload.data !== undefined) parts.push(`\`\`\`${JSON.stringify(payload.data, null, 2)}\`\`\``);
  return parts.join('\n');
}

async function appendLine(path: string, record: Record<string, unknown>): Promise<void> {
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    // mode applies only when the file is created; an existing file keeps its mode
    const handle = await open(path, 'a', 0o600);
    try {
      await handle.appendFile(`${JSON.stringify(record)}\n`, 'utf8');
    } finally {
      await handle.close();
    }
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new PaddockError(
      'UPSTREAM_ERROR',
      `The notification file ${path} could not be written (${code}); an operator should check that path and its permissions.`,
    );
  }
}

async function post(
  http: HttpClient,
  name: string,
  url: string,
  headers: Record<string, string>,
  body: Record<string, unknown>,
  ctx: NotifyContext,
): Promise<number> {
  const response = await http.request(
    {
      method: 'POST',
      url,
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      timeoutMs: Math.min(WEBHOOK_TIMEOUT_MS, http.limits.maxTimeoutMs),
      maxBytes: Math.min(WEBHOOK_REPLY_BYTES, http.limits.maxBytesLimit),
    },
    ctx,
  );
  if (response.status < 200 || response.status > 299) {
    const reply = response.encoding === 'utf8' ? response.body.slice(0, 300) : '';
    throw new PaddockError(
      'UPSTREAM_ERROR',
      `Channel "${name}" answered HTTP ${response.status}; the notification was not delivered. Check the channel's URL and credentials${reply ? ` (reply: ${reply})` : ''}.`,
      { status: response.status },
    );
  }
  return response.status;
}
