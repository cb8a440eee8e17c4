/** Text about upstream servers for our own messages; no MCP SDK here, so code that only reports loads none. */

const MAX_UPSTREAM_TEXT = 500;

/** Shortens text that comes from an upstream server before it goes into one of our messages. */
export function clip(text: string, max = MAX_UPSTREAM_TEXT): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > max ? `${oneLine.slice(0, max)}…` : oneLine;
}

/** The reason given when a message over the result cap made Paddock drop a connection. */
export function overflowReason(maxBytes: number, bytes?: number): string {
  const mib = (maxBytes / (1024 * 1024)).toFixed(1).replace(/\.0$/, '');
  return (
    `a message from the server${bytes ? ` (${bytes}+ bytes)` : ''} exceeded the ${mib} MiB result limit, ` +
    'so the connection was dropped; ask for less data (paging, filters)'
  );
}
