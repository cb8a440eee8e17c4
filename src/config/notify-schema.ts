import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { headerRecord, httpUrl } from './fragments.js';

const headers = headerRecord.describe(
  'Extra request headers, e.g. an Authorization header; keep secrets out of the file with environment-variable expansion.',
);

const webhookChannel = z
  .object({
    type: z.literal('webhook').describe('POST a JSON body {title, message, data, sentAt} to `url`.'),
    url: httpUrl.describe('The endpoint; it must be allowed by policy.http like any other destination.'),
    headers: headers.optional(),
  })
  .strict()
  .describe('A generic webhook.');

const slackChannel = z
  .object({
    type: z.literal('slack').describe('POST {text} to a Slack-compatible incoming webhook.'),
    url: httpUrl.describe('The incoming-webhook URL; it must be allowed by policy.http.'),
    headers: headers.optional(),
  })
  .strict()
  .describe('A Slack (or Mattermost, Rocket.Chat…) incoming webhook.');

const fileChannel = z
  .object({
    type: z.literal('file').describe('Append one JSON line per notification to a file on the host.'),
    path: z
      .string()
      .max(4096)
      .refine((p) => isAbsolute(p) && !p.includes('\0') && !p.split('/').includes('..'), {
        message: 'must be an absolute host path without ".." segments',
      })
      .describe('Absolute host path of the JSONL file; created with mode 0600 when missing.'),
  })
  .strict()
  .describe('A JSONL file.');

const logChannel = z
  .object({
    type: z.literal('log').describe('Write a `notify.sent` event to the server log.'),
  })
  .strict()
  .describe('The server log.');

/** One notification channel. */
export const notifyChannelSchema = z
  .discriminatedUnion('type', [webhookChannel, slackChannel, fileChannel, logChannel])
  .describe('A notification channel: webhook, slack, file or log.');

/** The `notify` section of paddock.yaml. */
export const notifySchema = z
  .object({
    channels: z
      .record(
        z
          .string()
          .regex(
            /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/,
            'must be 1-64 letters, digits, "_" or "-", starting with a letter or digit',
          ),
        notifyChannelSchema,
      )
      .default({})
      .describe(
        'Named channels the notify tool and agents can send to, e.g. `ops: {type: slack, url: ...}`.',
      ),
  })
  .strict()
  .describe('Notification channels for the notify tool.');

/** The parsed `notify` section. */
export type NotifyConfig = z.infer<typeof notifySchema>;
/** One parsed channel. */
export type NotifyChannel = z.infer<typeof notifyChannelSchema>;
