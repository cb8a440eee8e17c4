/**
 * Cutting text at UTF-8 boundaries: the one place that knows how a UTF-8 sequence is laid out.
 * Output buffers, terminal cursors, HTTP bodies and audit inputs all cut through these.
 */

/** Whether `byte` is a continuation byte (10xxxxxx). */
function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/** Bytes at the end of `bytes` that begin a UTF-8 sequence still missing bytes (0 to 3). */
export function incompleteUtf8Tail(bytes: Uint8Array): number {
  const len = bytes.length;
  for (let back = 1; back <= Math.min(4, len); back++) {
    const b = bytes[len - back]!;
    if (isContinuation(b)) continue;
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return back >= need ? 0 : back;
  }
  return 0;
}

/**
 * Length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence. A buffer
 * that holds nothing but the start of one sequence is kept whole, so a reader always advances.
 */
export function utf8SafeLength(bytes: Uint8Array): number {
  const tail = incompleteUtf8Tail(bytes);
  return tail === bytes.length ? bytes.length : bytes.length - tail;
}

/** `buffer` without an incomplete UTF-8 sequence at its end (left there by a byte cap). */
export function trimIncompleteUtf8(buffer: Buffer): Buffer {
  const tail = incompleteUtf8Tail(buffer);
  return tail === 0 ? buffer : buffer.subarray(0, buffer.length - tail);
}

/** Continuation bytes at the start of `bytes` (at most 3): the rest of a character cut off before. */
export function leadingContinuationBytes(bytes: Uint8Array): number {
  let skip = 0;
  while (skip < bytes.length && skip < 3 && isContinuation(bytes[skip]!)) skip++;
  return skip;
}

/** `bytes` as text without a character cut at either end. */
export function utf8Inner(bytes: Buffer): string {
  const body = bytes.subarray(leadingContinuationBytes(bytes));
  return body.subarray(0, utf8SafeLength(body)).toString('utf8');
}

/**
 * Cuts `text` to at most `maxBytes` UTF-8 bytes including a marker
 * `…[truncated N bytes]` that says how many bytes were dropped. The cut never splits a
 * character, so the result is valid UTF-8. Text that fits is returned unchanged.
 */
export function truncateUtf8(text: string, maxBytes: number): string {
  // Every UTF-16 code unit encodes to at most 3 bytes, so short text needs no measuring.
  if (text.length * 3 <= maxBytes) return text;
  const totalBytes = Buffer.byteLength(text, 'utf8');
  if (totalBytes <= maxBytes) return text;
  const budget = Math.max(0, maxBytes - Buffer.byteLength(marker(totalBytes)));
  // Encode only a head that is surely long enough: `budget` code units give ≥ `budget` bytes.
  // A pair split at the end of the head encodes as a 3-byte U+FFFD that always lies past
  // `budget`, so the step back below drops it.
  const head = Buffer.from(text.slice(0, budget), 'utf8');
  let cut = Math.min(budget, head.length);
  // Step back over continuation bytes to land on the start of a character.
  while (cut > 0 && cut < head.length && isContinuation(head[cut] ?? 0)) cut--;
  return head.subarray(0, cut).toString('utf8') + marker(totalBytes - cut);
}

function marker(droppedBytes: number): string {
  return `…[truncated ${droppedBytes} bytes]`;
}
