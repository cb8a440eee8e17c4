import { MAX_NOTIFY_MESSAGE_BYTES, type Notifier, type NotifyPayload } from '../../net/notifier.js';
import { PaddockError } from '../../shared/errors.js';
import { declareTool } from '../define.js';
import { s } from '../schema.js';
import type { Tool } from '../tool.js';
import { parseJsonText } from './json-text.js';

/** The data argument as the object it must be. */
function dataObject(text: string): Record<string, unknown> {
  const data = parseJsonText(text, 'data');
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      'data must be the JSON text of an object, a string such as \'{"build": 42}\'; send the details that way.',
      {
        problems: ['data: must be a JSON object'],
      },
    );
  }
  return data as Record<string, unknown>;
}

/** notify: push a message to one of the configured channels. */
export function createNotifyTool(notifier: Notifier): Tool {
  const names = notifier.channelNames();
  // the names are listed in the description rather than as an enum, so that an unknown
  // name reaches the notifier and gets its NOT_FOUND answer listing the channels
  const channel = s.string({
    minLength: 1,
    maxLength: 64,
    description: names.length
      ? `Name of the channel: one of ${names.join(', ')}.`
      : 'Name of the channel. No channel is configured on this server, so every call fails until an operator adds one.',
  });
  return declareTool({
    name: 'notify',
    title: 'Notify',
    description:
      'Send a notification to a person or system through one of the channels configured on this server (a webhook, a Slack channel, a log file, the server log). ' +
      'Use it to report a result, ask for attention or raise an alert once the thing is worth someone reading; do not use it for progress chatter. ' +
      'Keep the message self-contained: say what happened and what, if anything, the reader should do. Put machine-readable extras in data. ' +
      'Webhook destinations pass the same domain policy as http_post; an unknown channel fails with NOT_FOUND listing the channel names.',
    input: s.object(
      {
        channel,
        message: s.string({
          minLength: 1,
          maxLength: MAX_NOTIFY_MESSAGE_BYTES,
          description: `The message text, at most ${MAX_NOTIFY_MESSAGE_BYTES} bytes.`,
        }),
        title: s.string({ maxLength: 200, description: 'A short headline.' }),
        data: s.string({
          maxLength: 65_536,
          description:
            'Optional structured details: the JSON text of an object, a string such as \'{"build": 42}\' (at most 64 KiB).',
        }),
      },
      { required: ['channel', 'message'], additionalProperties: false },
    ),
    annotations: {
      title: 'Notify',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    },
    source: 'builtin',
    toolsets: ['builtin'],
    async execute(input, ctx) {
      const payload: NotifyPayload = { message: input.message };
      if (input.title !== undefined) payload.title = input.title;
      if (input.data !== undefined) payload.data = dataObject(input.data);
      const rules: string[] = [];
      const receipt = await notifier.send(input.channel, payload, {
        policy: ctx.policy,
        signal: ctx.signal,
        deadline: ctx.deadline,
        logger: ctx.logger,
        onPolicyDecision: (decision) => {
          rules.push(decision.rule);
          ctx.notePolicyRule(rules.join(' -> '));
        },
      });
      return { structured: { delivered: true, ...receipt } };
    },
  });
}
