#!/usr/bin/env node
// Bundles the m4a command into one ESM file, dist/cli/main.js (over tsc's output of src/cli/main.ts;
// every other file of dist/ stays tsc's, and the pi/omp extension keeps loading those). Why: a cold
// `m4a send` from an agent's bash tool resolved and loaded some 30 modules before it said a word to
// the daemon; one file is one read and one compile.
//
// - The CLI, client and wire layers and commander are in the bundle; a command group imported with
//   import() stays lazy inside it (esbuild wraps it: evaluated only when that command runs).
// - Anything else of src/ (the daemon for `serve`, stores, doors, attest, wake) stays out: such an
//   import is rewritten to the tsc output in dist/, so native modules (better-sqlite3,
//   @node-rs/argon2, the peercred addon) and the daemon's own file lookups are untouched.
// - Each bundled module's `import.meta.url` becomes the URL its tsc output would have
//   (dist/cli/setup/x.js …), so relative lookups (package.json, dist paths) mean what they meant.
// - LAZY libraries, which only setup and the guard use, are CommonJS files of their own in
//   dist/cli/vendor/, required when a module that imports them is first evaluated. Bundled, they
//   made the file three times larger for V8 to compile on every start; imported from node_modules,
//   esbuild hoists the import to the top and every command would load them. Node's own modules
//   are required the same way, so `m4a send` does not load readline for the MCP bridge.
import { build } from 'esbuild';
import { readFile, rm } from 'node:fs/promises';
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = resolve(root, 'src');
const outfile = resolve(root, 'dist/cli/main.js');
const vendorDir = resolve(root, 'dist/cli/vendor');
const inBundle = ['cli', 'client', 'wire'].map((d) => resolve(src, d) + sep);
const LAZY = ['zod', 'jsonc-parser', '@decimalturn/toml-patch'];
const lazyFilter = new RegExp(`^(${LAZY.map((n) => n.replace(/[/.]/g, '\\$&')).join('|')})$`);
const vendorName = (/** @type {string} */ name) => `${name.replace('/', '+')}.cjs`;

/** `src/a/b.ts` → the path of its tsc output relative to the bundle's folder, as a `./` or `../` specifier. */
const distSpecifier = (/** @type {string} */ file) => {
  const rel = relative(dirname(outfile), resolve(root, 'dist', relative(src, file))).replace(/\.ts$/, '.js');
  return rel.startsWith('.') ? rel : `./${rel}`;
};

/** @type {import('esbuild').Plugin} */
const layers = {
  name: 'm4a-cli-bundle',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (args.namespace === 'lazy') return undefined;
      const target = resolve(args.resolveDir, args.path).replace(/\.js$/, '.ts');
      if (!target.startsWith(src + sep) || inBundle.some((d) => target.startsWith(d))) return undefined;
      return { path: distSpecifier(target), external: true };
    });
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      if (!text.includes('import.meta.url')) return { contents: text, loader: 'ts' };
      const here = `new URL(${JSON.stringify(distSpecifier(args.path))}, import.meta.url).href`;
      return { contents: text.replaceAll('import.meta.url', here), loader: 'ts' };
    });
    // A LAZY import, or one of Node's modules, becomes a bundled CommonJS stub whose require() runs
    // when its importer is first evaluated (an ES import of it would be hoisted and run at start).
    b.onResolve({ filter: lazyFilter }, (args) =>
      args.namespace === 'lazy' ? { path: `./vendor/${vendorName(args.path)}`, external: true } : { path: args.path, namespace: 'lazy' },
    );
    b.onResolve({ filter: /^node:/ }, (args) => (args.namespace === 'lazy' ? { path: args.path, external: true } : { path: args.path, namespace: 'lazy' }));
    b.onLoad({ filter: /.*/, namespace: 'lazy' }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)});`, loader: 'js' }));
  },
};

await rm(vendorDir, { recursive: true, force: true });
await Promise.all([
  build({
    entryPoints: [resolve(src, 'cli/main.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // commander and the stubs are CommonJS: their require() needs a real one in an ES module.
    banner: { js: "import { createRequire as __m4aCreateRequire } from 'node:module';\nconst require = __m4aCreateRequire(import.meta.url);" },
    external: ['better-sqlite3', '@node-rs/argon2', 'node-gyp-build'],
    plugins: [layers],
    sourcemap: true,
    logLevel: 'warning',
  }),
  ...LAZY.map((name) =>
    build({
      stdin: { contents: `export * from ${JSON.stringify(name)};`, resolveDir: root },
      outfile: resolve(vendorDir, vendorName(name)),
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      // jsonc-parser's `main` is a UMD build whose require()s esbuild cannot follow; its `module` is plain ESM.
      mainFields: ['module', 'main'],
      logLevel: 'warning',
    }),
  ),
]);
