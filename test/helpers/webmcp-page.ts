/**
 * A WebMCP client inside a dock page, as an agent in the browser would be one: it lists and calls
 * the tools the page registered with the Web Model Context API.
 */
import type { Page } from 'playwright-core';

export interface PageTool {
  name: string;
  description: string;
  inputSchema?: unknown;
}

/** Lists the page's WebMCP tools from inside the page, as an agent in the browser would. */
export function pageTools(page: Page): Promise<PageTool[]> {
  return page.evaluate(async () => {
    const doc = (globalThis as unknown as { document: { modelContext: { getTools(): Promise<PageTool[]> } } })
      .document;
    const mc = doc.modelContext;
    return (await mc.getTools()).map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: t.inputSchema,
    }));
  });
}

/** Calls one WebMCP tool from inside the page; the parsed result. */
export async function pageCall(page: Page, name: string, args: unknown): Promise<Record<string, unknown>> {
  const text = await page.evaluate(
    async ({ name, json }) => {
      const mc = (
        globalThis as unknown as {
          document: {
            modelContext: {
              getTools(): Promise<{ name: string }[]>;
              executeTool(tool: unknown, input: string): Promise<string>;
            };
          };
        }
      ).document.modelContext;
      // a snapshot after a launch may re-register the tools: wait for the one asked for
      let tool: { name: string } | undefined;
      for (let i = 0; i < 200 && !tool; i++) {
        tool = (await mc.getTools()).find((t) => t.name === name);
        if (!tool) await new Promise((r) => setTimeout(r, 50));
      }
      if (!tool) throw new Error(`no WebMCP tool ${name}`);
      return mc.executeTool(tool, json);
    },
    { name, json: JSON.stringify(args) },
  );
  return JSON.parse(text) as Record<string, unknown>;
}
