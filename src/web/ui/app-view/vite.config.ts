/**
 * Build of the computer view that MCP Apps hosts render (`ui://paddock/computer.html`): one
 * self-contained HTML file, dist/app-view/computer.html, with its script and styles inline —
 * the view loads nothing over the network (its host gives it no network at all).
 */
import { fileURLToPath } from 'node:url';
import { defineConfig, type Plugin } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

/** Moves every emitted script and stylesheet into the HTML page and drops the files. */
function inlineIntoHtml(): Plugin {
  return {
    name: 'paddock-inline-view',
    enforce: 'post',
    generateBundle(_options, bundle) {
      const page = Object.values(bundle).find((f) => f.fileName.endsWith('.html'));
      if (page?.type !== 'asset') throw new Error('The view build emitted no HTML page.');
      let html = String(page.source);
      for (const [name, file] of Object.entries(bundle)) {
        if (file.type === 'chunk') {
          const tag = new RegExp(`<script[^>]*src="[^"]*${escapeRegExp(file.fileName)}"[^>]*></script>`);
          const code = file.code.replace(/<\/(script)/gi, '<\\/$1');
          html = html.replace(tag, () => `<script type="module">${code}</script>`);
          delete bundle[name];
        } else if (file.fileName.endsWith('.css')) {
          const tag = new RegExp(`<link[^>]*href="[^"]*${escapeRegExp(file.fileName)}"[^>]*>`);
          html = html.replace(tag, () => `<style>${String(file.source)}</style>`);
          delete bundle[name];
        }
      }
      if (/<(script|link)[^>]+(src|href)=/.test(html))
        throw new Error('The view still links a file; it must be self-contained.');
      page.source = html;
    },
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export default defineConfig({
  root,
  base: './',
  publicDir: false,
  logLevel: 'warn',
  plugins: [inlineIntoHtml()],
  build: {
    outDir: fileURLToPath(new URL('../../../../dist/app-view', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    assetsInlineLimit: Number.POSITIVE_INFINITY,
    cssCodeSplit: false,
    modulePreload: false,
    chunkSizeWarningLimit: 2000,
    rollupOptions: { input: { computer: fileURLToPath(new URL('./computer.html', import.meta.url)) } },
  },
});
