'use strict';
// paddock-tool: call the agent's tools from a shell command in a Paddock computer.
//   paddock-tool list
//   paddock-tool call NAME '{"key":"value"}'      (or - to read the JSON from stdin)
// The result is JSON on stdout (pipe it into jq). Exit codes: 0 ok, 1 the tool failed,
// 2 usage error, 3 no channel (stderr redirected, the command ended, or not in a computer).
const path = require('node:path');
const fs = require('node:fs');
const { listTools, callTool, ToolError } = require(path.join(__dirname, '..', 'node', 'index.cjs'));

const USAGE = `usage: paddock-tool list
       paddock-tool call NAME 'JSON'   (JSON may be - to read it from stdin)`;

function fail(code, message, exit) {
  process.stderr.write(`paddock-tool: ${code}: ${message}\n`);
  process.exit(exit);
}

async function main() {
  const [cmd, name, json, ...extra] = process.argv.slice(2);
  if (cmd === '-h' || cmd === '--help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (cmd === 'list' && !name) {
    process.stdout.write(`${JSON.stringify(await listTools(), null, 2)}\n`);
    return;
  }
  if (cmd !== 'call' || !name || extra.length > 0) fail('USAGE', USAGE, 2);
  let text = json === undefined ? '{}' : json;
  if (text === '-') text = fs.readFileSync(0, 'utf8');
  let args;
  try {
    args = JSON.parse(text);
  } catch (e) {
    fail('USAGE', `the arguments are not valid JSON (${e.message}); quote them, e.g. '{"id":1}'`, 2);
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args))
    fail('USAGE', 'the arguments must be a JSON object', 2);
  const result = await callTool(name, args);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

main().catch((e) => {
  if (e instanceof ToolError) fail(e.code, e.message, e.code === 'CHANNEL_CLOSED' ? 3 : 1);
  fail('INTERNAL', e?.message ? e.message : String(e), 1);
});
