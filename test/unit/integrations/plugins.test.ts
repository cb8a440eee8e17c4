import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadPlugins } from '../../../src/integrations/plugins.js';
import { PaddockError } from '../../../src/shared/errors.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { toolContext } from '../../fixtures/mcp/harness.js';

const PLUGIN_API = new URL('../../../src/plugin.js', import.meta.url).href;
const ZOD = import.meta.resolve('zod');
const header = `import { defineTool } from ${JSON.stringify(PLUGIN_API)};\nimport { z } from ${JSON.stringify(ZOD)};\n`;

let root: string;
let dir: string;

before(() => {
  root = mkdtempSync(join(tmpdir(), 'paddock-plugins-'));
  dir = join(root, 'plugins');
  mkdirSync(dir);
  const write = (name: string, body: string) => writeFileSync(join(dir, name), body);
  write(
    'weather.mjs',
    `${header}export default [defineTool({
  name: 'weather_now', description: 'Current weather for a city.',
  input: z.object({ city: z.string() }),
  execute: ({ city }, ctx) => ({ city, temperature: 21, invocation: ctx.invocationId }),
})];
export const explode = defineTool({
  name: 'weather_explode', description: 'Always throws.', input: z.object({}),
  execute: () => { throw new Error('sensor offline'); },
});\n`,
  );
  write(
    'plain.js',
    `import { z } from ${JSON.stringify(ZOD)};
export const shout = { name: 'shout', description: 'Upper-cases text.', input: z.object({ text: z.string() }), execute: ({ text }) => text.toUpperCase() };\n`,
  );
  write('broken.mjs', `throw new Error('missing API key for the CRM');\n`);
  write('empty.mjs', 'export const version = 1;\n');
  write(
    'zdupe.mjs',
    `${header}export default defineTool({ name: 'shout', description: 'Again.', input: z.object({}), execute: () => 'x' });\n`,
  );
  write('typed.ts', 'export default [];\n');
  write('_helper.mjs', `throw new Error('helpers starting with _ are not plugins');\n`);
  write('notes.txt', 'not a module');
});
after(() => rmSync(root, { recursive: true, force: true }));

describe('loadPlugins', () => {
  test('loads the tools of every good module and reports each bad one without stopping', async () => {
    const { tools, plugins } = await loadPlugins(dir, silentLogger());
    assert.deepEqual(tools.map((t) => [t.name, t.source]).sort(), [
      ['shout', 'plugin:plain'],
      ['weather_explode', 'plugin:weather'],
      ['weather_now', 'plugin:weather'],
    ]);
    const byModule = Object.fromEntries(plugins.map((p) => [p.module, p]));
    assert.deepEqual(Object.keys(byModule).sort(), ['broken', 'empty', 'plain', 'typed', 'weather', 'zdupe']);
    assert.equal(byModule.weather?.state, 'loaded');
    assert.match(byModule.broken?.error ?? '', /missing API key for the CRM/);
    assert.match(byModule.empty?.error ?? '', /exports no tools/);
    assert.match(byModule.zdupe?.error ?? '', /"shout" is already provided by plugin plain/);
    // Node 22.18+ strips types itself: there the .ts module loads (and exports nothing here).
    const loadsTypeScript = Boolean((process.features as { typescript?: unknown }).typescript);
    assert.match(
      byModule.typed?.error ?? '',
      loadsTypeScript ? /exports no tools/ : /TypeScript.*compile it to JavaScript/,
    );
    for (const name of ['broken', 'empty', 'zdupe', 'typed']) assert.equal(byModule[name]?.state, 'failed');
    assert.ok(tools.every((t) => t.toolsets.includes('integrations') && t.toolsets.includes('plugins')));
  });

  test('calls a plugin tool with the tool context', async () => {
    const { tools } = await loadPlugins(dir, silentLogger());
    const ctx = toolContext();
    try {
      const weather = tools.find((t) => t.name === 'weather_now')!;
      assert.deepEqual(await weather.execute({ city: 'Oslo' }, ctx), {
        structured: { city: 'Oslo', temperature: 21, invocation: 'inv_test' },
      });
      const shout = tools.find((t) => t.name === 'shout')!;
      assert.deepEqual(await shout.execute({ text: 'hey' }, ctx), {
        content: [{ type: 'text', text: 'HEY' }],
      });
    } finally {
      ctx.dispose();
    }
  });

  test('turns a throw at call time into an INTERNAL error naming the plugin, never a crash', async () => {
    const { tools } = await loadPlugins(dir, silentLogger());
    const ctx = toolContext();
    try {
      await assert.rejects(
        tools.find((t) => t.name === 'weather_explode')!.execute({}, ctx),
        (e: unknown) =>
          e instanceof PaddockError &&
          e.code === 'INTERNAL' &&
          /plugin weather\) failed: sensor offline/.test(e.message) &&
          !/\n\s+at /.test(e.message),
      );
    } finally {
      ctx.dispose();
    }
  });

  test('loads named files and reports a named file that does not exist', async () => {
    const { tools, plugins } = await loadPlugins(
      [join(dir, 'plain.js'), join(dir, 'nope.mjs')],
      silentLogger(),
    );
    assert.deepEqual(
      tools.map((t) => t.name),
      ['shout'],
    );
    assert.match(plugins.find((p) => p.module === 'nope')?.error ?? '', /file not found/);
  });

  test('a missing plugins directory means no plugins', async () => {
    assert.deepEqual(await loadPlugins(join(root, 'absent'), silentLogger()), { tools: [], plugins: [] });
  });
});
