/**
 * Writing a tool-channel reply into the client's FIFO: the FIFO must exist, be a FIFO (never
 * followed through a symlink) and have a reader; otherwise the reply is dropped.
 */
import { closeSync, constants, fstatSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';

/** Writes `body` into the FIFO at `path`; `delivered` is false when no reader was there. */
export function writeReply(path: string, body: string): { delivered: boolean } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return { delivered: false };
  }
  if (!fstatSync(fd).isFIFO()) {
    closeSync(fd);
    return { delivered: false };
  }
  // The open descriptor is all the reply needs: removing the name now spares the client a
  // process (`rm`) per call. Clients that remove it themselves ignore that it is gone.
  try {
    unlinkSync(path);
  } catch {
    // already removed by the client
  }
  // Most replies fit the FIFO's buffer: written at once, without a stream per reply.
  const bytes = Buffer.from(body);
  let written = 0;
  try {
    written = writeSync(fd, bytes);
  } catch {
    // full (EAGAIN): the stream below writes it as the reader drains it
  }
  if (written === bytes.length) {
    closeSync(fd);
    return { delivered: true };
  }
  const socket = new Socket({ fd, readable: false, writable: true });
  socket.on('error', () => socket.destroy());
  socket.end(bytes.subarray(written));
  return { delivered: true };
}
