import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isPaddockError } from '../../../src/shared/errors.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { JsonSchema, Tool } from '../../../src/tools/tool.js';
import { InputValidator } from '../../../src/tools/validation.js';

function tool(name: string, inputSchema: JsonSchema, source: Tool['source'] = 'builtin'): Tool {
  return {
    name,
    description: `${name} tool`,
    inputSchema,
    annotations: {},
    source,
    toolsets: ['builtin'],
    execute: async () => ({ content: [] }),
  };
}

const fine: JsonSchema = {
  type: 'object',
  properties: { a: { type: 'string' } },
  additionalProperties: false,
};
/** Not a schema ajv can compile: the pattern is not a regular expression. */
const broken: JsonSchema = { type: 'object', properties: { a: { type: 'string', pattern: '([' } } };

function failsNaming(name: string) {
  return (e: unknown) => {
    assert.ok(isPaddockError(e), String(e));
    assert.equal(e.code, 'INVALID_ARGUMENT');
    assert.match(e.message, new RegExp(`"${name}"`));
    assert.match(e.message, /not a valid JSON Schema/);
    return true;
  };
}

describe('tool registry', () => {
  it('refuses a tool whose input schema does not compile, naming it, and adds none of the batch', () => {
    const registry = new ToolRegistry();
    let changes = 0;
    registry.onChange(() => changes++);
    assert.throws(
      () => registry.register([tool('good', fine), tool('bad_schema', broken)]),
      failsNaming('bad_schema'),
    );
    assert.deepEqual(registry.list(), []);
    assert.equal(changes, 0);
  });

  it('keeps the previous tools of a source when its new list has a schema that does not compile', () => {
    const registry = new ToolRegistry();
    registry.register([tool('up_one', fine, 'mcp:up')]);
    assert.throws(
      () =>
        registry.replaceSource('mcp:up', [tool('up_two', fine, 'mcp:up'), tool('up_bad', broken, 'mcp:up')]),
      failsNaming('up_bad'),
    );
    assert.deepEqual(
      registry.list().map((t) => t.name),
      ['up_one'],
    );
  });

  it('compiles each schema at registration, with the validator it is given', () => {
    const validator = new InputValidator();
    const compiled: string[] = [];
    const compile = validator.compile.bind(validator);
    validator.compile = (schema, name) => {
      compiled.push(name);
      return compile(schema, name);
    };
    const registry = new ToolRegistry(validator);
    const schema = { ...fine };
    registry.register([tool('once', schema)]);
    assert.deepEqual(compiled, ['once']);
    // validation at call time finds the compiled function (no error for a valid input)
    validator.validate(schema, { a: 'x' }, 'once');
    assert.throws(() => validator.validate(schema, { a: 1 }, 'once'), /Invalid arguments for once/);
  });

  it('still refuses a name that another source already provides', () => {
    const registry = new ToolRegistry();
    registry.register([tool('same', fine)]);
    assert.throws(() => registry.register([tool('same', fine, 'plugin:x')]), /collision/);
  });
});
