/**
 * The composition root: the only place that wires services. `createPaddock` (main/paddock.ts)
 * builds one Paddock; `startServer` (main/server.ts) runs it as the one server of a data directory.
 */

export { VERSION } from './main/common.js';
export * from './main/paddock.js';
export * from './main/server.js';
export { compilePolicy } from './policy/compile.js';
