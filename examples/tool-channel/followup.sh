#!/usr/bin/env bash
# Reads notes with one tool, branches on the answer, writes with another.
set -euo pipefail
topic="${1:?usage: followup.sh TOPIC}"

count=$(paddock-tool call recall_memory "$(jq -n --arg q "$topic" '{query: $q, limit: 50}')" | jq '.memories | length')

if [ "$count" -eq 0 ]; then
  note="First note about $topic."
else
  note="Follow-up on $topic: $count earlier note(s) found."
fi
paddock-tool call save_memory "$(jq -n --arg c "$note" --arg t "$topic" '{content: $c, tags: [$t]}')" | jq -r '.id'
echo "$note"
