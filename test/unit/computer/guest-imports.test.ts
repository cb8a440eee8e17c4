import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defaultGuestDir } from '../../../src/computer/backend/bwrap/backend.js';

describe('guest agent build', () => {
  it('imports only Node built-ins and its own files at run time (it runs alone inside the sandbox)', () => {
    const dir = defaultGuestDir();
    const files = readdirSync(dir).filter((f) => f.endsWith('.js'));
    assert.ok(files.includes('agent.js'));
    const runtime = new Set<string>();
    const visit = (file: string) => {
      if (runtime.has(file)) return;
      runtime.add(file);
      const source = readFileSync(join(dir, file), 'utf8');
      for (const m of source.matchAll(/^import\s[^'"]*['"]([^'"]+)['"]/gm)) {
        const spec = m[1]!;
        if (spec.startsWith('node:')) continue;
        assert.match(spec, /^\.\/[a-z-]+\.js$/, `${file} imports ${spec}`);
        visit(spec.slice(2));
      }
    };
    visit('agent.js');
    assert.ok(!runtime.has('protocol.js'), 'the zod protocol module stays on the host side');
  });
});
