import { truncateUtf8 } from '../shared/text.js';
import type { CallOutcome } from '../tools/gateway.js';
import type { ToolResult } from '../tools/tool.js';

/**
 * The text a model sees for one tool outcome: a successful result's structured content as JSON,
 * else its text blocks (other blocks are named, not inlined); a failure as the JSON error body
 * `{code, message, …}`. Cut to `maxBytes` with a note saying how much was left out.
 */
export function outcomeText(outcome: CallOutcome, maxBytes: number): { text: string; isError: boolean } {
  if (!outcome.ok) return { text: cap(JSON.stringify(outcome.error.toJSON()), maxBytes), isError: true };
  return { text: cap(resultText(outcome.result), maxBytes), isError: outcome.result.isError === true };
}

function resultText(result: ToolResult): string {
  if (result.content && result.content.length > 0) {
    const parts = result.content.map((block) => {
      if (block.type === 'text' && typeof block.text === 'string') return block.text;
      if (block.type === 'resource' && typeof (block.resource as { text?: unknown })?.text === 'string') {
        return (block.resource as { text: string }).text;
      }
      return `[${block.type} content not shown]`;
    });
    return parts.join('\n');
  }
  if (result.structured) return JSON.stringify(result.structured);
  return '(no output)';
}

function cap(text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return text;
  return `${truncateUtf8(text, maxBytes)}\n[the result was cut; ask for less (a page, a filter) if you need the rest]`;
}
