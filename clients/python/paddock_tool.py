"""paddock_tool: call the agent's tools from a Python script running in a Paddock computer.

    import paddock_tool

    tools = paddock_tool.list_tools()
    issues = paddock_tool.call_tool("linear_list_issues", {"teamId": "ENG"})

A failed call raises paddock_tool.ToolError with .code and .message. Requests travel on
this process's stderr (an APC frame a terminal never shows); replies come back through a
FIFO in $PADDOCK_CHANNEL_DIR. Standard library only. The wire is defined in Paddock's
src/channel/wire.ts.
"""

import itertools
import json
import os
import secrets
import select
import time

__all__ = ["list_tools", "call_tool", "ToolError"]


class ToolError(Exception):
    """A failed call. `code` is Paddock's error code (POLICY_DENIED, LIMIT_EXCEEDED, ...)."""

    def __init__(self, code, message, details=None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}


# Request ids: random per process, then counted (no random bytes per call).
_ids = map(("p" + secrets.token_urlsafe(9) + "-{}").format, itertools.count())
# What the channel's `stderr` file says, per directory: it never changes while the command runs.
_expected = {}
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _channel():
    nonce = os.environ.get("PADDOCK_CHANNEL")
    directory = os.environ.get("PADDOCK_CHANNEL_DIR")
    if not nonce or not directory:
        raise ToolError(
            "CHANNEL_CLOSED",
            "No tool channel here: it exists inside commands started with run_command or shell in a Paddock computer.",
        )
    expected = _expected.get(directory)
    if expected is None:
        try:
            with open(os.path.join(directory, "stderr"), encoding="utf-8") as f:
                expected = _expected[directory] = f.read().strip()
        except OSError:
            raise ToolError("CHANNEL_CLOSED", "The tool channel of this command is gone (the command has ended).") from None
    try:
        actual = os.readlink("/proc/self/fd/2")
    except OSError:
        actual = ""
    if actual != expected:
        raise ToolError(
            "CHANNEL_CLOSED",
            "stderr is redirected, which turns the tool channel off (requests travel on stderr). "
            "Redirect stdout instead, e.g. `> out.json`, and leave stderr alone.",
        )
    try:
        deadline = int(os.environ.get("PADDOCK_CHANNEL_DEADLINE", "")) / 1000.0
    except ValueError:
        deadline = time.time() + 60
    return nonce, directory, deadline


def _request(body):
    nonce, directory, deadline = _channel()
    rid = next(_ids)
    fifo = directory + "/" + rid
    rfd = wfd = -1
    try:
        os.mkfifo(fifo, 0o600)
        rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        # our own writer keeps reads waiting (instead of EOF) until the reply's newline arrives
        wfd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        for fd in (rfd, wfd):
            if fd >= 0:
                os.close(fd)
        try:
            os.unlink(fifo)
        except OSError:
            pass
        raise ToolError("CHANNEL_CLOSED", f"Could not create the reply FIFO: {e}") from None
    replied = False
    try:
        # the JSON itself is the payload (valid JSON never holds the ESC that ends the frame)
        frame = b"\x1b_paddock;" + nonce.encode() + b";" + rid.encode() + b";" + _encode(body).encode() + b"\x1b\\"
        view = memoryview(frame)
        while view:
            n = os.write(2, view)
            view = view[n:]
        data = b""
        while b"\n" not in data:
            remaining = deadline - time.time()
            if remaining <= 0:
                raise ToolError("TIMEOUT", "No reply before the command's timeout; raise timeoutMs on the command.")
            ready, _, _ = select.select([rfd], [], [], remaining)
            if ready:
                try:
                    # 64 KiB reads come from the heap; a 1 MiB buffer would be mapped and unmapped per call
                    data += os.read(rfd, 1 << 16)
                except BlockingIOError:
                    pass
        replied = True
        reply = json.loads(data.split(b"\n", 1)[0])
    finally:
        os.close(rfd)
        os.close(wfd)
        if not replied:
            # the guest removes the FIFO as it replies; a call that gave up removes its own
            try:
                os.unlink(fifo)
            except OSError:
                pass
    if reply.get("ok"):
        return reply.get("result")
    error = dict(reply.get("error") or {})
    code = error.pop("code", "INTERNAL")
    message = error.pop("message", "The tool call failed.")
    raise ToolError(code, message, error)


def list_tools():
    """The tools this command may call: dicts with name, description and inputSchema."""
    return _request({"v": 1, "op": "list"})["tools"]


def call_tool(name, args=None):
    """Calls one tool and returns its result (structured result, else parsed text, else text)."""
    if not isinstance(name, str) or not name:
        raise ToolError("INVALID_ARGUMENT", "call_tool needs a tool name.")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolError("INVALID_ARGUMENT", 'call_tool arguments must be a dict, e.g. {"teamId": "ENG"}.')
    result = _request({"v": 1, "op": "call", "name": name, "args": args})
    texts = [b.get("text", "") for b in (result.get("content") or []) if isinstance(b, dict) and b.get("type") == "text"]
    text = "\n".join(texts)
    if result.get("isError"):
        raise ToolError("UPSTREAM_ERROR", text or "The tool reported an error.")
    if result.get("structured") is not None:
        return result["structured"]
    try:
        return json.loads(text)
    except ValueError:
        return text
