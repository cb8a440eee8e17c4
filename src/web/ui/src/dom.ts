/** Small DOM helpers: element building (text only, never HTML strings) and formatting. */

type Attrs = Record<string, string | number | boolean | null | undefined>;
type Child = Node | string | null | undefined | false;

/** Creates an element with attributes (`class`, `data-*`, `aria-*`, …) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, ...children);
  return el;
}

/** Appends children, skipping empty ones. */
export function append(el: Element, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
}

/** Replaces an element's children. */
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, ...children);
}

/** `14:03:27` in local time. */
export function clock(epochMs: number): string {
  const d = new Date(epochMs);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/** `3 ms`, `1.24 s`, `2 min 5 s`. */
export function duration(ms: number): string {
  if (ms < 1) return '<1 ms';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** `+12.345 s` since the computer service started. */
export function sinceBoot(ms: number): string {
  return `+${(ms / 1000).toFixed(3)}s`;
}

/** Shortens a caller like `mcp:4f2a0c7e-…` for display. */
export function shortCaller(caller: string): string {
  const colon = caller.indexOf(':');
  if (colon < 0) return caller;
  const kind = caller.slice(0, colon);
  const rest = caller.slice(colon + 1);
  return rest.length > 10 && kind === 'mcp' ? `${kind}:${rest.slice(0, 8)}…` : caller;
}

/** Formats a JSON text for reading; returns it unchanged when it is not JSON. */
export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
