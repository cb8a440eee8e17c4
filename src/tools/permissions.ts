import { requireCjs } from '../shared/require-cjs.js';

const picomatch = requireCjs('picomatch') as typeof import('picomatch');

import { PaddockError } from '../shared/errors.js';
import type { Permission, Tool } from './tool.js';

/** One permission rule: a tool-name glob and what it grants. */
export interface PermissionRule {
  pattern: string;
  permission: Permission;
  /** Where the rule was declared (for messages), e.g. `paddock.yaml` or `mcp_servers.yaml#github`. */
  origin: string;
  /**
   * The only tool source the rule applies to (`mcp:<server>` for a server's own permissions),
   * so `every`'s `"*"` never reaches the tools of a server named `every_admin`. Absent: any source.
   */
  source?: string;
}

interface CompiledRule extends PermissionRule {
  match: (name: string) => boolean;
  /** Exact names beat globs; among globs, more literal characters win. */
  specificity: number;
  order: number;
}

const GLOB_CHARS = /[*?[\]{}!]/g;

/**
 * Decides `auto | ask | deny` per tool. The most specific matching pattern wins (an
 * exact name beats any glob; among globs the one with more literal characters; on a
 * tie the rule declared later). A rule bound to a source matches that source's tools only. Without a matching rule: upstream MCP tools `ask`,
 * everything else `auto`.
 */
export class PermissionPolicy {
  private readonly rules: CompiledRule[];

  constructor(rules: readonly PermissionRule[]) {
    this.rules = rules.map((r, order) => {
      if (!r.pattern.trim()) {
        throw new PaddockError(
          'INVALID_ARGUMENT',
          `permissions (${r.origin}): an empty tool pattern is not allowed.`,
        );
      }
      const isGlob = GLOB_CHARS.test(r.pattern);
      GLOB_CHARS.lastIndex = 0;
      const literal = r.pattern.replace(GLOB_CHARS, '').length;
      return {
        ...r,
        match: isGlob ? picomatch(r.pattern, { dot: true }) : (name: string) => name === r.pattern,
        specificity: isGlob ? literal : Number.MAX_SAFE_INTEGER,
        order,
      };
    });
  }

  /** The permission of a tool and the rule that decided it. */
  resolve(tool: Pick<Tool, 'name' | 'source'>): { permission: Permission; rule: string } {
    let best: CompiledRule | undefined;
    for (const r of this.rules) {
      if (!r.match(tool.name) || (r.source !== undefined && r.source !== tool.source)) continue;
      if (
        !best ||
        r.specificity > best.specificity ||
        (r.specificity === best.specificity && r.order > best.order)
      ) {
        best = r;
      }
    }
    if (best) return { permission: best.permission, rule: `permissions[${best.pattern}]@${best.origin}` };
    const upstream = tool.source.startsWith('mcp:');
    return {
      permission: upstream ? 'ask' : 'auto',
      rule: upstream ? 'default:upstream=ask' : 'default=auto',
    };
  }
}
