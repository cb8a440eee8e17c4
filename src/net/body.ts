import type { Readable } from 'node:stream';
import { trimIncompleteUtf8 } from '../shared/text.js';

/** How a response body is carried in a result. */
export type BodyEncoding = 'utf8' | 'base64';

/** A decoded response body. */
export interface DecodedBody {
  body: string;
  encoding: BodyEncoding;
  /** Bytes of the body that the result carries. */
  bytes: number;
}

/** Media types outside `text/*` whose bodies are text. */
const TEXTUAL_MEDIA_TYPES = new Set([
  'application/json',
  'application/xml',
  'application/javascript',
  'application/ecmascript',
  'application/x-javascript',
  'application/x-www-form-urlencoded',
  'application/x-ndjson',
  'application/yaml',
  'application/x-yaml',
  'application/toml',
  'application/graphql',
  'application/sql',
]);

const UTF8_LABELS = new Set(['utf-8', 'utf8', 'unicode-1-1-utf-8', 'us-ascii', 'ascii']);

/** Splits a Content-Type header into its lower-cased media type and charset (if any). */
export function parseContentType(header: string | undefined): { mediaType?: string; charset?: string } {
  if (!header) return {};
  const [type, ...params] = header.split(';');
  const mediaType = type?.trim().toLowerCase() || undefined;
  let charset: string | undefined;
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    charset = param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
  }
  return { mediaType, charset };
}

/** Whether a media type carries text: `text/*`, JSON, XML, JavaScript, form data and a few more. */
export function isTextualMediaType(mediaType: string): boolean {
  return (
    mediaType.startsWith('text/') ||
    TEXTUAL_MEDIA_TYPES.has(mediaType) ||
    mediaType.endsWith('+json') ||
    mediaType.endsWith('+xml')
  );
}

/**
 * Turns raw body bytes into text when the content type says it is text and the bytes
 * decode cleanly in its charset (UTF-8 when none is named); otherwise base64. A body
 * without a content type is text only when it is valid UTF-8 without NUL bytes.
 */
export function decodeBody(raw: Buffer, contentType: string | undefined, truncated: boolean): DecodedBody {
  const { mediaType, charset } = parseContentType(contentType);
  const textual = mediaType ? isTextualMediaType(mediaType) : !raw.includes(0);
  if (textual && (!charset || UTF8_LABELS.has(charset))) {
    const bytes = truncated ? trimIncompleteUtf8(raw) : raw;
    try {
      const body = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
      return { body, encoding: 'utf8', bytes: bytes.length };
    } catch {
      // not valid UTF-8 after all: carried as base64 below
    }
  } else if (textual && charset) {
    try {
      const body = new TextDecoder(charset).decode(raw);
      return { body, encoding: 'utf8', bytes: raw.length };
    } catch {
      // a charset this runtime cannot decode: carried as base64 below
    }
  }
  return { body: raw.toString('base64'), encoding: 'base64', bytes: raw.length };
}

/** The bytes read from a stream and whether the stream had more than the cap. */
export interface CappedRead {
  buffer: Buffer;
  truncated: boolean;
}

/**
 * Reads a stream into memory, holding at most `maxBytes`. When one more byte arrives the
 * read stops and resolves with `truncated: true`; the caller then destroys the stream.
 * `declaredBytes` (a Content-Length) lets an oversized body be flagged without waiting
 * for the extra byte.
 */
export function readCapped(stream: Readable, maxBytes: number, declaredBytes?: number): Promise<CappedRead> {
  return new Promise<CappedRead>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (outcome: { read: CappedRead } | { error: Error }) => {
      if (settled) return;
      settled = true;
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('close', onClose);
      stream.off('error', onError);
      // a destroyed stream may still report an error later; it no longer concerns anyone
      stream.on('error', () => {});
      if ('read' in outcome) resolve(outcome.read);
      else reject(outcome.error);
    };
    const onData = (chunk: Buffer) => {
      const room = maxBytes - size;
      if (chunk.length > room) {
        if (room > 0) chunks.push(Buffer.from(chunk.subarray(0, room)));
        size += Math.max(0, room);
        settle({ read: { buffer: Buffer.concat(chunks, size), truncated: true } });
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
      if (size === maxBytes && declaredBytes !== undefined && declaredBytes > maxBytes) {
        settle({ read: { buffer: Buffer.concat(chunks, size), truncated: true } });
      }
    };
    const onEnd = () => settle({ read: { buffer: Buffer.concat(chunks, size), truncated: false } });
    const onClose = () => settle({ error: new Error('the connection closed before the body was complete') });
    const onError = (error: Error) => settle({ error });
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('close', onClose);
    stream.once('error', onError);
  });
}
