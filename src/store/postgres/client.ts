// The postgres.js client, loaded with one fix applied.
//
// postgres.js 3.4.9 defers small writes to a setImmediate; when the server closes the connection
// first (pg_terminate_backend, a restart, a failover) the deferred write runs after the socket was
// dropped and throws an uncaught TypeError that ends the whole process (porsager/postgres#1154,
// #1208; fixes proposed in #1168, #1176, #1209, not released). A daemon must survive exactly that.
// So its CommonJS build is loaded here with `nextWrite` guarded: with no socket, the write is
// dropped and the connection's pending queries reject with CONNECTION_CLOSED (as closing itself
// does), and the pool reconnects. If a later release changes that function, the text is not found
// and the client loads unchanged (check the changelog for the fix then and drop this file).
import { readFileSync } from 'node:fs';
import { createRequire, Module } from 'node:module';
import { dirname, join } from 'node:path';
import type postgresNs from 'postgres';

const require = createRequire(import.meta.url);

const UNGUARDED = '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)';
const GUARDED =
  '  function nextWrite(fn) {\n' +
  '    if (!socket) { /* m4a: closed before the deferred write ran */\n' +
  '      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n' +
  '      chunk = nextWriteTimer = null\n' +
  "      error(Errors.connection('CONNECTION_CLOSED', options))\n" +
  '      return false\n' +
  '    }\n' +
  '    const x = socket.write(chunk, fn)';

/** Whether the loaded client carries the guard (false: the text changed upstream). */
export let nextWriteGuarded = false;

function load(): typeof postgresNs {
  const index = require.resolve('postgres'); // the CommonJS build: cjs/src/index.js
  const file = join(dirname(index), 'connection.js');
  if (!(file in require.cache)) {
    const source = readFileSync(file, 'utf8');
    if (source.includes(UNGUARDED)) {
      type Internal = Module & { _compile(code: string, filename: string): void };
      const m = new Module(file) as Internal;
      m.filename = file;
      m.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(dirname(file));
      m._compile(source.replace(UNGUARDED, GUARDED), file);
      m.loaded = true;
      require.cache[file] = m;
      nextWriteGuarded = true;
    }
  }
  return require('postgres') as typeof postgresNs;
}

export const postgres: typeof postgresNs = load();
