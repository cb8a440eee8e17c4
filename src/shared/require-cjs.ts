import { createRequire } from 'node:module';

/**
 * Loads a CommonJS package through `require`. An ESM `import` of CommonJS makes Node scan the
 * package's source for its export names on every start (tens of milliseconds for picomatch or
 * ipaddr.js), which commands that start often (`policy check`, `tools list`) pay for nothing.
 * Cast the result to `typeof import('<package>')`.
 */
export const requireCjs = createRequire(import.meta.url);
