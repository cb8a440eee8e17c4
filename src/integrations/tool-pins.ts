/**
 * What a pin covers and how a listed tool is judged against it. A tool's definition is its
 * whole wire form as Paddock forwards it to callers — name, title, description, input and
 * output schema, annotations — in canonical JSON (keys sorted at every level), hashed with
 * SHA-256. Anything else a server sends with a tool never reaches a caller, so it cannot
 * change what a model is told.
 */
import { canonicalJson, sha256Hex } from '../shared/canonical-json.js';
import type { ToolPin } from '../store/tool-pins.js';
import type { UpstreamToolDef } from './connection-types.js';

/** The definition as pinned: canonical JSON of the fields Paddock forwards. */
export function definitionText(def: UpstreamToolDef): string {
  return canonicalJson({
    name: def.name,
    title: def.title,
    description: def.description,
    inputSchema: def.inputSchema,
    outputSchema: def.outputSchema,
    annotations: def.annotations,
  });
}

/** SHA-256 (hex) of {@link definitionText}: what a pin and `mcp_servers.yaml`'s `pins` hold. */
export function definitionHash(def: UpstreamToolDef): string {
  return sha256Hex(definitionText(def));
}

/** How a listed tool differs from what was trusted. */
export type ToolChangeKind = 'added' | 'changed' | 'removed';

/** One tool that is not as pinned (quarantined unless it was removed). */
export interface ToolChange {
  server: string;
  /** The tool's name as the server lists it. */
  tool: string;
  kind: ToolChangeKind;
  /** The trusted definition's hash (null for a new tool). */
  pinnedHash: string | null;
  /** The listed definition's hash (null for a removed tool). */
  liveHash: string | null;
  /** Top-level fields that differ (`description`, `inputSchema`…); every field of an added tool. */
  fields: string[];
  /** A person already refused exactly this definition. */
  rejected: boolean;
  /** Canonical JSON of the trusted definition, or null. */
  pinnedDefinition: string | null;
  /** Canonical JSON of the listed definition, or null. */
  liveDefinition: string | null;
}

/** The outcome of judging one server's list. */
export interface PinVerdict {
  /** Tools whose definition is the pinned one: listed and callable. */
  usable: UpstreamToolDef[];
  /** Added and changed tools (quarantined) and removed ones (gone, listed for the review). */
  changes: ToolChange[];
  /** The server has no pins yet: everything listed is usable and gets pinned now. */
  firstSight: boolean;
}

/** Judges a listed set against the stored decisions of its server. */
export function judge(
  server: string,
  defs: readonly UpstreamToolDef[],
  pins: readonly ToolPin[],
): PinVerdict {
  const pinned = new Map(pins.filter((p) => p.decision === 'pinned').map((p) => [p.tool, p]));
  const rejected = new Map(pins.filter((p) => p.decision === 'rejected').map((p) => [p.tool, p.hash]));
  if (pinned.size === 0) return { usable: [...defs], changes: [], firstSight: true };
  const usable: UpstreamToolDef[] = [];
  const changes: ToolChange[] = [];
  const listed = new Set<string>();
  for (const def of defs) {
    listed.add(def.name);
    const text = definitionText(def);
    const hash = sha256Hex(text);
    const pin = pinned.get(def.name);
    if (pin && pin.hash === hash) {
      usable.push(def);
      continue;
    }
    changes.push({
      server,
      tool: def.name,
      kind: pin ? 'changed' : 'added',
      pinnedHash: pin?.hash ?? null,
      liveHash: hash,
      fields: changedFields(pin?.definition ?? null, text),
      rejected: rejected.get(def.name) === hash,
      pinnedDefinition: pin?.definition ?? null,
      liveDefinition: text,
    });
  }
  for (const [tool, pin] of pinned) {
    if (listed.has(tool)) continue;
    changes.push({
      server,
      tool,
      kind: 'removed',
      pinnedHash: pin.hash,
      liveHash: null,
      fields: [],
      rejected: false,
      pinnedDefinition: pin.definition,
      liveDefinition: null,
    });
  }
  return { usable, changes, firstSight: false };
}

/** Top-level members whose canonical JSON differs between two definitions. */
function changedFields(before: string | null, after: string): string[] {
  const a = before === null ? {} : (JSON.parse(before) as Record<string, unknown>);
  const b = JSON.parse(after) as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys.filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
}

/** A pin of `def` as first seen or accepted. */
export function pinOf(server: string, def: UpstreamToolDef, decidedBy: string, now = Date.now()): ToolPin {
  const definition = definitionText(def);
  return {
    server,
    tool: def.name,
    decision: 'pinned',
    hash: sha256Hex(definition),
    definition,
    decidedAt: now,
    decidedBy,
  };
}

/** A sentence saying what changed, for the error a caller sees and the audit row. */
export function describeChange(change: ToolChange): string {
  const what =
    change.kind === 'added'
      ? 'is new since its server was pinned'
      : change.kind === 'removed'
        ? 'is no longer listed'
        : `changed its ${change.fields.join(', ') || 'definition'}`;
  return `Tool "${change.tool}" of MCP server "${change.server}" ${what}`;
}

/**
 * Checks a listed set against hashes pinned in `mcp_servers.yaml`: the set must be exactly
 * the pinned tools with exactly those hashes. Returns the first problem, naming the tool, or null.
 */
export function configPinProblem(
  pins: Readonly<Record<string, string>>,
  defs: readonly UpstreamToolDef[],
): string | null {
  const listed = new Set<string>();
  for (const def of [...defs].sort((a, b) => a.name.localeCompare(b.name))) {
    listed.add(def.name);
    const expected = pins[def.name];
    if (expected === undefined)
      return `it lists tool "${def.name}", which mcp_servers.yaml does not pin (its hash is ${definitionHash(def)})`;
    const hash = definitionHash(def);
    if (hash !== expected)
      return `tool "${def.name}" has hash ${hash}, but mcp_servers.yaml pins ${expected}`;
  }
  const missing = Object.keys(pins)
    .sort()
    .find((t) => !listed.has(t));
  return missing === undefined ? null : `it no longer lists tool "${missing}", which mcp_servers.yaml pins`;
}
