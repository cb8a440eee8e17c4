import type { Disposable } from '../shared/disposable.js';
import { Emitter } from '../shared/emitter.js';
import { PaddockError } from '../shared/errors.js';
import type { Tool } from './tool.js';
import { InputValidator } from './validation.js';

/**
 * All tools of the server, whatever their source. A name collision is a load error
 * naming both sources, never a silent shadow; so is an input schema that does not compile.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();
  /** A listener's failure never breaks registration. */
  private readonly changes = new Emitter();

  /**
   * @param validator compiles each tool's input schema once, at registration; pass the
   *   gateway's, so that its validation reuses the compiled schema.
   */
  constructor(private readonly validator: InputValidator = new InputValidator()) {}

  /**
   * Adds tools; throws INVALID_ARGUMENT (adding none) when any name is taken or repeated, or
   * when an input schema does not compile (the error names the tool).
   */
  register(tools: readonly Tool[]): void {
    const incoming = new Map<string, Tool>();
    for (const tool of tools) {
      this.validator.compile(tool.inputSchema, tool.name);
      const existing = this.tools.get(tool.name) ?? incoming.get(tool.name);
      if (existing) {
        throw new PaddockError(
          'INVALID_ARGUMENT',
          `Tool name collision: "${tool.name}" is provided by both ${existing.source} and ${tool.source}. ` +
            'Rename one of them (for upstream servers, rename the server in mcp_servers.yaml).',
          { tool: tool.name, sources: [existing.source, tool.source] },
        );
      }
      incoming.set(tool.name, tool);
    }
    for (const [name, tool] of incoming) this.tools.set(name, tool);
    if (incoming.size > 0) this.changed();
  }

  /**
   * Replaces every tool of one source with a new list (upstream servers whose tool list
   * changed). Collisions with other sources and schemas that do not compile throw and leave
   * the registry unchanged.
   */
  replaceSource(source: string, tools: readonly Tool[]): void {
    const previous = [...this.tools.values()].filter((t) => t.source === source);
    for (const t of previous) this.tools.delete(t.name);
    try {
      this.register(tools);
    } catch (e) {
      for (const t of previous) this.tools.set(t.name, t);
      throw e;
    }
    if (tools.length === 0 && previous.length > 0) this.changed();
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  /** Tools in registration order, optionally filtered. */
  list(filter?: (tool: Tool) => boolean): Tool[] {
    const all = [...this.tools.values()];
    return filter ? all.filter(filter) : all;
  }

  /** Called after every change of the tool set (MCP `tools/list_changed`). */
  onChange(listener: () => void): Disposable {
    return this.changes.on(listener);
  }

  private changed(): void {
    this.changes.emit();
  }
}
