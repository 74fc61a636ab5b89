// The web door's static files, read once (at the first request) from the browser folder beside this
// one: the page (shell.html: every /web/… path serves it and the script draws the page the path
// names), its styles, its icon and its ES modules. Built, that folder (dist/doors/web/browser/) holds
// the modules as tsc compiled them (tsconfig.browser.json) and copies of the other files. Run from
// the source tree (tsx), the modules are compiled here from their .ts by the TypeScript compiler (a
// dev dependency), so the tests never serve a stale build; the output is kept by content in
// node_modules/.cache, so only the first daemon after an edit pays for loading the compiler.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

export interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

export interface WebAssets {
  /** The one HTML page. */
  shell: Asset;
  /** By request path: /web/assets/NAME and /favicon.ico. */
  files: ReadonlyMap<string, Asset>;
}

const DIR = new URL('../browser/', import.meta.url);
const FROM_SOURCE = import.meta.url.endsWith('.ts');
const JS = 'text/javascript; charset=utf-8';
const MODULES_MARK = '<!-- modules -->';
const TYPES: Readonly<Record<string, string>> = { css: 'text/css; charset=utf-8', svg: 'image/svg+xml' };

function asset(body: Buffer, type: string): Asset {
  return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
}

type Transpile = (source: string, fileName: string) => string;

const CACHE = new URL('../../../../node_modules/.cache/m4a-web/', import.meta.url);

/** The browser tsconfig's emit settings, one file at a time (imports are never followed); each
 *  output cached under the digest of the compiler's version, the settings and the source. */
function sourceCompiler(): Transpile {
  const require = createRequire(import.meta.url);
  const version = (require('typescript/package.json') as { version: string }).version;
  let ts: typeof import('typescript') | undefined;
  return (source, fileName) => {
    const key = createHash('sha256').update(`${version}\0ES2022 esm verbatim\0${fileName}\0${source}`).digest('hex');
    const cached = new URL(`${key}.js`, CACHE);
    try {
      return readFileSync(cached, 'utf8');
    } catch {
      /* compiled below */
    }
    ts ??= require('typescript') as typeof import('typescript');
    const compilerOptions = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, verbatimModuleSyntax: true };
    const out = ts.transpileModule(source, { compilerOptions, fileName }).outputText;
    try {
      mkdirSync(CACHE, { recursive: true });
      const tmp = new URL(`${key}.${process.pid}.tmp`, CACHE);
      writeFileSync(tmp, out);
      renameSync(tmp, cached);
    } catch {
      /* a read-only tree compiles every time */
    }
    return out;
  };
}

/** The page names every module up front, so the browser fetches them at once instead of one level
 *  of imports after another. */
function withPreloads(shell: Asset, modules: string[]): Asset {
  const html = shell.body.toString('utf8');
  if (!html.includes(MODULES_MARK)) throw new Error(`shell.html has no ${MODULES_MARK}`);
  const links = modules.map((p) => `<link rel="modulepreload" href="${p}">`).join('\n');
  return asset(Buffer.from(html.replace(MODULES_MARK, links), 'utf8'), shell.type);
}

function load(): WebAssets {
  const files = new Map<string, Asset>();
  let compile: Transpile | undefined;
  let shell: Asset | undefined;
  for (const name of readdirSync(DIR).sort()) {
    const read = (): Buffer => readFileSync(new URL(name, DIR));
    const ext = name.slice(name.lastIndexOf('.') + 1);
    if (name === 'shell.html') shell = asset(read(), 'text/html; charset=utf-8');
    else if (FROM_SOURCE && ext === 'ts' && !name.endsWith('.d.ts')) {
      compile ??= sourceCompiler();
      files.set(`/web/assets/${name.slice(0, -3)}.js`, asset(Buffer.from(compile(read().toString('utf8'), name), 'utf8'), JS));
    } else if (!FROM_SOURCE && ext === 'js') files.set(`/web/assets/${name}`, asset(read(), JS));
    else if (TYPES[ext]) files.set(`/web/assets/${name}`, asset(read(), TYPES[ext]));
  }
  const icon = files.get('/web/assets/icon.svg');
  if (!shell || !icon || !files.has('/web/assets/app.js')) throw new Error(`the browser files are missing from ${DIR.pathname} (run npm run build)`);
  files.set('/favicon.ico', icon);
  return {
    shell: withPreloads(
      shell,
      [...files.keys()].filter((p) => p.endsWith('.js')),
    ),
    files,
  };
}

let loaded: WebAssets | undefined;

export function webAssets(): WebAssets {
  return (loaded ??= load());
}

/** A built daemon reads its files when the door is made, so an install missing one fails at start;
 *  the source tree waits for the first request, so daemons that never serve the page never load
 *  the compiler. */
export function loadWebAssetsAtStart(): void {
  if (!FROM_SOURCE) webAssets();
}
