"""Reads notes with one tool, branches on the answer, writes with another."""
import sys

import paddock_tool

topic = sys.argv[1]
try:
    found = paddock_tool.call_tool("recall_memory", {"query": topic, "limit": 50})
except paddock_tool.ToolError as e:
    sys.exit(f"lookup failed: {e.code}: {e.message}")

count = len(found["memories"])
note = f"First note about {topic}." if count == 0 else f"Follow-up on {topic}: {count} earlier note(s) found."
saved = paddock_tool.call_tool("save_memory", {"content": note, "tags": [topic]})
print(saved["id"])
print(note)
