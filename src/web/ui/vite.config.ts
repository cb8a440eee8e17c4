/**
 * Build of the dock page: `npm run build:ui` (vite build --config src/web/ui/vite.config.ts).
 * The output goes to dist/ui, which `paddock serve` serves at `/`.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/',
  publicDir: 'public',
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../../../dist/ui', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 600,
  },
});
