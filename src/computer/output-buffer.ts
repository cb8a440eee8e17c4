/**
 * Bounded retention of one output stream: the newest `capacityBytes` bytes, addressed by
 * absolute offsets since the stream began. Memory grows with the output up to the capacity,
 * never beyond, however much a job prints.
 */
import { StringDecoder } from 'node:string_decoder';

/** A slice read from the buffer. */
export interface OutputSlice {
  bytes: Buffer;
  /** Absolute offset just after the returned bytes. */
  nextOffset: number;
}

export class OutputBuffer {
  private ring: Buffer = Buffer.alloc(0);
  /** Absolute offset of the end of the stream (total bytes ever written). */
  private end = 0;

  constructor(readonly capacityBytes: number) {
    if (!Number.isInteger(capacityBytes) || capacityBytes < 1)
      throw new RangeError('capacityBytes must be a positive integer');
  }

  /** Total bytes written since the stream began. */
  get endOffset(): number {
    return this.end;
  }

  /** Oldest absolute offset still retained. */
  get startOffset(): number {
    return Math.max(0, this.end - this.capacityBytes);
  }

  /** Appends bytes, dropping the oldest beyond the capacity. */
  append(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (chunk.length >= this.capacityBytes) {
      this.ensure(this.capacityBytes);
      const tail = chunk.subarray(chunk.length - this.capacityBytes);
      this.end += chunk.length;
      const at = this.position(this.end - this.capacityBytes);
      const first = Math.min(this.capacityBytes - at, tail.length);
      tail.copy(this.ring, at, 0, first);
      tail.copy(this.ring, 0, first);
      return;
    }
    this.ensure(Math.min(this.capacityBytes, Math.max(this.end - this.startOffset + chunk.length, 1)));
    let at = this.position(this.end);
    let done = 0;
    while (done < chunk.length) {
      const n = Math.min(chunk.length - done, this.ring.length - at);
      chunk.copy(this.ring, at, done, done + n);
      done += n;
      at = (at + n) % this.ring.length;
    }
    this.end += chunk.length;
  }

  /**
   * Up to `maxBytes` from absolute `offset`. Callers check `offset >= startOffset` first; an
   * offset beyond the end returns no bytes.
   */
  read(offset: number, maxBytes: number): OutputSlice {
    const from = Math.max(offset, this.startOffset);
    const to = Math.min(this.end, from + Math.max(0, maxBytes));
    if (to <= from) return { bytes: Buffer.alloc(0), nextOffset: Math.max(from, Math.min(offset, this.end)) };
    const out = Buffer.allocUnsafe(to - from);
    let at = this.position(from);
    let done = 0;
    while (done < out.length) {
      const n = Math.min(out.length - done, this.ring.length - at);
      this.ring.copy(out, done, at, at + n);
      done += n;
      at = (at + n) % this.ring.length;
    }
    return { bytes: out, nextOffset: to };
  }

  /**
   * The bytes from absolute `from` to `to` decoded as UTF-8, without copying them first (a flood
   * read this way makes no garbage but the string). Callers keep the range inside the retained
   * bytes; a character cut at either end decodes as U+FFFD, like `Buffer.toString`.
   */
  text(from: number, to: number): string {
    const start = Math.max(from, this.startOffset);
    const end = Math.min(to, this.end);
    if (end <= start) return '';
    const at = this.position(start);
    const first = Math.min(end - start, this.ring.length - at);
    if (first === end - start) return this.ring.toString('utf8', at, at + first);
    // the range wraps: a character may straddle the ring's end
    const decoder = new StringDecoder('utf8');
    return (
      decoder.write(this.ring.subarray(at, at + first)) +
      decoder.write(this.ring.subarray(0, end - start - first)) +
      decoder.end()
    );
  }

  /** Ring index of an absolute offset (the ring is full-size once anything wrapped). */
  private position(offset: number): number {
    return this.ring.length === 0 ? 0 : offset % this.ring.length;
  }

  /** Grows the ring (doubling, up to the capacity) keeping retained bytes at their positions. */
  private ensure(needed: number): void {
    if (this.ring.length >= needed) return;
    const size = Math.min(this.capacityBytes, Math.max(needed, this.ring.length * 2, 4096));
    const grown = Buffer.alloc(size);
    const kept = this.end - this.startOffset;
    if (kept > 0) {
      const retained = this.read(this.startOffset, kept).bytes;
      const start = this.startOffset % size;
      const first = Math.min(size - start, retained.length);
      retained.copy(grown, start, 0, first);
      retained.copy(grown, 0, first);
    }
    this.ring = grown;
  }
}
