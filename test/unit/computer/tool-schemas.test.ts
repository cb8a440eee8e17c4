import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BwrapBackend } from '../../../src/computer/backend/bwrap/backend.js';
import { ComputerManager } from '../../../src/computer/manager.js';
import { createComputerBuiltins } from '../../../src/computer/tools/computer-builtins.js';
import { createComputerTools } from '../../../src/computer/tools/index.js';
import { computerSchema } from '../../../src/config/computer-schema.js';
import { isPaddockError } from '../../../src/shared/errors.js';
import { silentLogger } from '../../../src/shared/logger.js';
import type { JsonSchema, Tool } from '../../../src/tools/tool.js';
import { InputValidator } from '../../../src/tools/validation.js';

/** The reference's input schemas with descriptions removed: the contract the tools must keep. */
const CONTRACT: Record<string, { kind: 'answer' | 'act' | 'transact'; inputSchema: JsonSchema }> = JSON.parse(
  '{"list_profiles": {"kind": "answer", "inputSchema": {"type": "object", "properties": {"search": {"type": "string", "maxLength": 256}}, "required": [], "additionalProperties": false}}, "launch_computer": {"kind": "act", "inputSchema": {"type": "object", "properties": {"profileId": {"type": "string", "maxLength": 128}, "requestId": {"type": "string", "maxLength": 128}}, "required": ["profileId"], "additionalProperties": false}}, "get_computer_status": {"kind": "answer", "inputSchema": {"type": "object", "properties": {}, "required": [], "additionalProperties": false}}, "run_command": {"kind": "act", "inputSchema": {"type": "object", "properties": {"script": {"type": "string", "maxLength": 65536}, "cwd": {"type": "string", "maxLength": 1024}, "env": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 8192}}, "waitMs": {"type": "integer", "minimum": 0, "maximum": 10000}, "timeoutMs": {"type": "integer", "minimum": 1, "maximum": 300000}, "requestId": {"type": "string", "maxLength": 128}}, "required": ["script"], "additionalProperties": false}}, "read_job": {"kind": "answer", "inputSchema": {"type": "object", "properties": {"jobId": {"type": "string", "maxLength": 160}, "cursor": {"type": "string", "maxLength": 200}, "byteLimit": {"type": "integer", "minimum": 1, "maximum": 65536}}, "required": ["jobId"], "additionalProperties": false}}, "cancel_job": {"kind": "transact", "inputSchema": {"type": "object", "properties": {"jobId": {"type": "string", "maxLength": 160}}, "required": ["jobId"], "additionalProperties": false}}, "list_files": {"kind": "answer", "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "maxLength": 1024}, "offset": {"type": "integer", "minimum": 0, "maximum": 2147483647}, "limit": {"type": "integer", "minimum": 1, "maximum": 500}}, "required": ["path"], "additionalProperties": false}}, "read_file": {"kind": "answer", "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "maxLength": 1024}, "encoding": {"type": "string", "enum": ["utf8", "base64"]}, "offset": {"type": "integer", "minimum": 0, "maximum": 9007199254740991}, "byteLimit": {"type": "integer", "minimum": 1, "maximum": 65536}}, "required": ["path"], "additionalProperties": false}}, "write_file": {"kind": "act", "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "maxLength": 1024}, "content": {"type": "string", "maxLength": 90000}, "encoding": {"type": "string", "enum": ["utf8", "base64"]}, "overwrite": {"type": "boolean"}}, "required": ["path", "content", "overwrite"], "additionalProperties": false}}, "read_logs": {"kind": "answer", "inputSchema": {"type": "object", "properties": {"cursor": {"type": "string", "maxLength": 200}, "limit": {"type": "integer", "minimum": 1, "maximum": 200}, "level": {"type": "string", "enum": ["info", "warn", "err", "ok", "debug"]}}, "required": [], "additionalProperties": false}}, "create_launch_link": {"kind": "act", "inputSchema": {"type": "object", "properties": {"profileId": {"type": "string", "maxLength": 128}, "startupScript": {"type": "string", "maxLength": 2097152}}, "required": [], "additionalProperties": false}}, "list_terminals": {"kind": "answer", "inputSchema": {"type": "object", "properties": {}, "required": [], "additionalProperties": false}}, "create_terminal": {"kind": "act", "inputSchema": {"type": "object", "properties": {"activate": {"type": "boolean"}, "requestId": {"type": "string", "maxLength": 128}}, "required": [], "additionalProperties": false}}, "switch_terminal": {"kind": "act", "inputSchema": {"type": "object", "properties": {"terminalId": {"type": "string", "maxLength": 160}}, "required": ["terminalId"], "additionalProperties": false}}, "send_terminal_input": {"kind": "transact", "inputSchema": {"type": "object", "properties": {"terminalId": {"type": "string", "maxLength": 160}, "text": {"type": "string", "maxLength": 65536}, "key": {"type": "string", "enum": ["enter", "ctrl_c", "ctrl_d", "ctrl_z", "tab", "escape", "backspace", "up", "down", "left", "right"]}}, "required": ["terminalId"], "additionalProperties": false}}, "read_terminal_output": {"kind": "answer", "inputSchema": {"type": "object", "properties": {"terminalId": {"type": "string", "maxLength": 160}, "cursor": {"type": "string", "maxLength": 200}, "byteLimit": {"type": "integer", "minimum": 1, "maximum": 65536}}, "required": ["terminalId"], "additionalProperties": false}}, "navigate_preview": {"kind": "act", "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "maxLength": 4096}}, "required": ["path"], "additionalProperties": false}}}',
);

/**
 * Optional properties Paddock adds to the reference's tools (never a required one, never a change
 * to a reference property): each is named here so an addition is deliberate.
 */
const ADDITIONS: Record<string, string[]> = {
  run_command: ['background'],
  read_job: ['waitMs'],
  navigate_preview: ['port'],
  launch_computer: ['keepWorkspace'],
};

/**
 * Tools of Paddock's own, beyond the reference (issue 30's checkpoints), with their kinds: each is
 * named here so an addition is deliberate, and its input is a closed object like the reference's.
 */
const OWN_TOOLS: Record<string, 'answer' | 'act' | 'transact'> = {
  checkpoint_computer: 'act',
  list_checkpoints: 'answer',
  restore_checkpoint: 'transact',
  fork_computer: 'act',
};

function withoutDescriptions(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutDescriptions);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => k !== 'description')
        .map(([k, v]) => [k, withoutDescriptions(v)]),
    );
  }
  return value;
}

describe('computer tool definitions', () => {
  let dir: string;
  let manager: ComputerManager;
  let tools: Tool[];
  let builtins: Tool[];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-schemas-'));
    const logger = silentLogger();
    manager = new ComputerManager({
      backend: new BwrapBackend({ logger, useCgroups: false }),
      config: computerSchema.parse({}),
      dataDir: dir,
      dockUrl: 'http://x',
      logger,
    });
    tools = createComputerTools(manager);
    builtins = createComputerBuiltins(manager);
  });
  after(async () => {
    await manager.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps every limit, default-free shape, enum, required list and closed object of the reference schemas, adding only the named optional properties', () => {
    assert.deepEqual(
      tools.map((t) => t.name).sort(),
      [...Object.keys(CONTRACT), ...Object.keys(OWN_TOOLS)].sort(),
    );
    for (const tool of tools) {
      if (tool.name in OWN_TOOLS) {
        assert.equal(tool.inputSchema.additionalProperties, false, tool.name);
        continue;
      }
      const actual = withoutDescriptions(tool.inputSchema) as JsonSchema & {
        properties: Record<string, unknown>;
      };
      const contract = CONTRACT[tool.name]!.inputSchema as JsonSchema & {
        properties: Record<string, unknown>;
      };
      const added = ADDITIONS[tool.name] ?? [];
      const kept = Object.fromEntries(Object.entries(actual.properties).filter(([k]) => !added.includes(k)));
      assert.deepEqual({ ...actual, properties: kept }, contract, tool.name);
      for (const name of added) {
        if (!(name in actual.properties)) continue;
        assert.ok(!(name in contract.properties), `${tool.name}.${name} is a reference property`);
      }
    }
  });

  it("maps the reference kinds (and those of Paddock's own tools) to MCP annotations", () => {
    for (const tool of tools) {
      const kind = OWN_TOOLS[tool.name] ?? CONTRACT[tool.name]!.kind;
      assert.equal(tool.annotations.readOnlyHint, kind === 'answer', tool.name);
      if (kind === 'transact') assert.equal(tool.annotations.destructiveHint, true, tool.name);
      if (kind === 'act') assert.equal(tool.annotations.destructiveHint, false, tool.name);
    }
  });

  it('describes every property and tells a model that scripts can call its tools', () => {
    for (const tool of [...tools, ...builtins]) {
      assert.ok(tool.description.length > 80, tool.name);
      for (const [name, prop] of Object.entries(
        (tool.inputSchema.properties ?? {}) as Record<string, JsonSchema>,
      )) {
        assert.equal(typeof prop.description, 'string', `${tool.name}.${name}`);
      }
      assert.ok(!/kandelo/i.test(tool.description), tool.name);
    }
    for (const name of ['run_command', 'shell']) {
      const d = [...tools, ...builtins].find((t) => t.name === name)!.description;
      assert.match(d, /paddock-tool/);
      assert.match(d, /paddock_tool/);
    }
  });

  it('serves read_file and write_file from one implementation in both tool sets, and adds list_dir and shell to the built-ins', () => {
    for (const name of ['read_file', 'write_file']) {
      const matches = tools.filter((t) => t.name === name);
      assert.equal(matches.length, 1);
      assert.deepEqual(matches[0]!.toolsets, ['computer', 'builtin']);
    }
    assert.deepEqual(
      builtins.map((t) => t.name),
      ['list_dir', 'shell'],
    );
    for (const t of builtins) assert.deepEqual(t.toolsets, ['builtin', 'computer']);
    const shell = builtins[1]!;
    assert.equal((shell.inputSchema.properties as Record<string, JsonSchema>).timeoutMs!.maximum, 300_000);
  });

  it('compiles every schema with the gateway validator, which refuses unknown properties and out-of-range values', () => {
    const v = new InputValidator();
    for (const tool of [...tools, ...builtins]) v.compile(tool.inputSchema, tool.name);
    const run = tools.find((t) => t.name === 'run_command')!;
    assert.throws(
      () => v.validate(run.inputSchema, { script: 'x', extra: 1 }, 'run_command'),
      (e) => isPaddockError(e),
    );
    assert.throws(
      () => v.validate(run.inputSchema, { script: 'x', waitMs: 10_001 }, 'run_command'),
      (e) => isPaddockError(e),
    );
    assert.doesNotThrow(() =>
      v.validate(run.inputSchema, { script: 'x', waitMs: 10_000, env: { A: 'b' } }, 'run_command'),
    );
  });
});
