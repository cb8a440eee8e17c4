'use strict';
/**
 * paddock-tool for Node: call the agent's tools from a script running in a Paddock computer.
 *
 *   const { listTools, callTool, ToolError } = require('paddock-tool');
 *   const issues = await callTool('linear_list_issues', { teamId: 'ENG' });
 *
 * Requests travel on this process's stderr (an APC frame the terminal never shows); the
 * reply comes back through a FIFO in $PADDOCK_CHANNEL_DIR. The wire is defined in Paddock's
 * src/channel/wire.ts. No dependency beyond Node itself.
 */
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawnSync } = require('node:child_process');

/** A failed call: `code` is Paddock's error code (POLICY_DENIED, LIMIT_EXCEEDED, …). */
class ToolError extends Error {
  constructor(code, message, details) {
    super(message);
    this.name = 'ToolError';
    this.code = code;
    this.details = details || {};
  }
}

function openChannel() {
  const nonce = process.env.PADDOCK_CHANNEL;
  const dir = process.env.PADDOCK_CHANNEL_DIR;
  if (!nonce || !dir) {
    throw new ToolError(
      'CHANNEL_CLOSED',
      'No tool channel here: it exists inside commands started with run_command or shell in a Paddock computer.',
    );
  }
  let expected;
  try {
    expected = fs.readFileSync(path.join(dir, 'stderr'), 'utf8').trim();
  } catch {
    throw new ToolError(
      'CHANNEL_CLOSED',
      'The tool channel of this command is gone (the command has ended).',
    );
  }
  let actual = '';
  try {
    actual = fs.readlinkSync('/proc/self/fd/2');
  } catch {
    // no stderr at all: treated as redirected
  }
  if (actual !== expected) {
    throw new ToolError(
      'CHANNEL_CLOSED',
      'stderr is redirected, which turns the tool channel off (requests travel on stderr). Redirect stdout instead, e.g. `> out.json`, and leave stderr alone.',
    );
  }
  const deadline = Number(process.env.PADDOCK_CHANNEL_DEADLINE) || Date.now() + 60_000;
  return { nonce, dir, deadline };
}

function request(body) {
  return new Promise((resolve, reject) => {
    let ch;
    try {
      ch = openChannel();
    } catch (e) {
      reject(e);
      return;
    }
    const id = crypto.randomBytes(12).toString('base64url');
    const fifo = path.join(ch.dir, id);
    const made = spawnSync('mkfifo', ['-m', '600', fifo]);
    if (made.status !== 0) {
      reject(
        new ToolError(
          'CHANNEL_CLOSED',
          `Could not create the reply FIFO in ${ch.dir}; the command may have ended.`,
        ),
      );
      return;
    }
    let rfd;
    let wfd;
    try {
      rfd = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
      // our own writer keeps reads waiting (instead of EOF) until the reply's newline arrives
      wfd = fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    } catch (e) {
      fs.rmSync(fifo, { force: true });
      reject(new ToolError('CHANNEL_CLOSED', `Could not open the reply FIFO: ${e.message}`));
      return;
    }
    const socket = new net.Socket({ fd: rfd, readable: true, writable: false });
    const chunks = [];
    let done = false;
    const finish = (err, value) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      try {
        fs.closeSync(wfd);
      } catch {}
      fs.rmSync(fifo, { force: true });
      if (err) reject(err);
      else resolve(value);
    };
    const timer = setTimeout(
      () =>
        finish(
          new ToolError('TIMEOUT', "No reply before the command's timeout; raise timeoutMs on the command."),
        ),
      Math.max(0, ch.deadline - Date.now()),
    );
    socket.on('error', (e) =>
      finish(new ToolError('CHANNEL_CLOSED', `Reading the reply failed: ${e.message}`)),
    );
    socket.on('data', (d) => {
      chunks.push(d);
      if (d.includes(0x0a)) {
        const line = Buffer.concat(chunks).toString('utf8').split('\n')[0];
        try {
          const reply = JSON.parse(line);
          if (reply.ok) finish(null, reply.result);
          else {
            const { code, message, ...details } = reply.error || {};
            finish(new ToolError(code || 'INTERNAL', message || 'The tool call failed.', details));
          }
        } catch {
          finish(new ToolError('INTERNAL', 'The channel reply was not JSON.'));
        }
      }
    });
    const payload = Buffer.from(JSON.stringify(body)).toString('base64url');
    process.stderr.write(`\x1b_paddock;${ch.nonce};${id};${payload}\x1b\\`);
  });
}

/** The structured result, else the text parsed as JSON, else the text. */
function unwrap(result) {
  const texts = (result.content || []).filter((b) => b && b.type === 'text').map((b) => b.text);
  const text = texts.join('\n');
  if (result.isError) throw new ToolError('UPSTREAM_ERROR', text || 'The tool reported an error.');
  if (result.structured !== null && result.structured !== undefined) return result.structured;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The tools this command may call: name, description, inputSchema. */
async function listTools() {
  const result = await request({ v: 1, op: 'list' });
  return result.tools;
}

/** Calls one tool; resolves with its result, rejects with a ToolError. */
async function callTool(name, args = {}) {
  if (typeof name !== 'string' || !name)
    throw new ToolError('INVALID_ARGUMENT', 'callTool needs a tool name.');
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    throw new ToolError('INVALID_ARGUMENT', 'callTool arguments must be an object, e.g. { teamId: "ENG" }.');
  }
  return unwrap(await request({ v: 1, op: 'call', name, args }));
}

module.exports = { listTools, callTool, ToolError };
