// Reads notes with one tool, branches on the answer, writes with another.
import { callTool, ToolError } from 'paddock-tool';

const topic = process.argv[2];
let found;
try {
  found = await callTool('recall_memory', { query: topic, limit: 50 });
} catch (e) {
  if (e instanceof ToolError) {
    console.error(`lookup failed: ${e.code}: ${e.message}`);
    process.exit(1);
  }
  throw e;
}
const count = found.memories.length;
const note =
  count === 0 ? `First note about ${topic}.` : `Follow-up on ${topic}: ${count} earlier note(s) found.`;
const saved = await callTool('save_memory', { content: note, tags: [topic] });
console.log(saved.id);
console.log(note);
