import { PaddockError } from '../../shared/errors.js';

/**
 * Parses a JSON text argument (schemas take free-form JSON as a string, which every client's
 * strict mode accepts). A parse failure is INVALID_ARGUMENT naming the field.
 */
export function parseJsonText(text: string, field: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new PaddockError(
      'INVALID_ARGUMENT',
      `${field} is not valid JSON (${(e as Error).message}); send it as JSON text, a string such as '{"key": "value"}'.`,
      { problems: [`${field}: is not valid JSON`] },
    );
  }
}
