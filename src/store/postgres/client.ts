// The postgres.js client, loaded with two fixes applied to its connection code.
//
// 1. postgres.js 3.4.9 defers small writes to a setImmediate; when the server closes the connection
//    first (pg_terminate_backend, a restart, a failover) the deferred write runs after the socket
//    was dropped and throws an uncaught TypeError that ends the whole process (porsager/postgres
//    #1154, #1208; fixes proposed in #1168, #1176, #1209, not released). A daemon must survive
//    exactly that. So `nextWrite` is guarded: with no socket, the write is dropped and the
//    connection's pending queries reject with CONNECTION_CLOSED (as closing itself does), and the
//    pool reconnects.
// 2. A result's rows are numbered by a counter per connection that only a completed statement
//    resets. A statement cut off while its rows arrive (its backend terminated, a statement
//    timeout) leaves the counter raised, and the next statement on that connection resolves to an
//    array whose first slots are holes (#1119, #1181, open): `const [row] = await sql…` reads
//    undefined, and a send to an existing account was refused unknown_participant. The counter is
//    reset where the connection starts afresh anyway: at ReadyForQuery, which ends every statement,
//    failed or not, and every reconnect's startup.
// The CommonJS build is compiled here with the fixes. If a later release changes the text, that fix
// is not applied and the client loads as released (check the changelog for the fix then; the tests
// in test/postgres/client-fixes.test.ts say which fix no longer applies).
import { readFileSync } from 'node:fs';
import { createRequire, Module } from 'node:module';
import { dirname, join } from 'node:path';
import type postgresNs from 'postgres';

const require = createRequire(import.meta.url);

interface Fix {
  name: 'next_write' | 'row_counter';
  from: string;
  to: string;
}

const FIXES: readonly Fix[] = [
  {
    name: 'next_write',
    from: '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)',
    to:
      '  function nextWrite(fn) {\n' +
      '    if (!socket) { /* m4a: closed before the deferred write ran */\n' +
      '      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n' +
      '      chunk = nextWriteTimer = null\n' +
      "      error(Errors.connection('CONNECTION_CLOSED', options))\n" +
      '      return false\n' +
      '    }\n' +
      '    const x = socket.write(chunk, fn)',
  },
  {
    name: 'row_counter',
    from: '    query = results = errorResponse = null\n    result = new Result()\n',
    to: '    query = results = errorResponse = null\n    result = new Result()\n    rows = 0 /* m4a: a cut-off statement left it raised */\n',
  },
];

/** The fixes the loaded client carries (one missing: its text changed upstream). */
export const appliedFixes = new Set<Fix['name']>();

function load(): typeof postgresNs {
  const index = require.resolve('postgres'); // the CommonJS build: cjs/src/index.js
  const file = join(dirname(index), 'connection.js');
  if (!(file in require.cache)) {
    let source = readFileSync(file, 'utf8');
    for (const f of FIXES) {
      // Exactly one place, or the text is not the one the fix was written for.
      if (source.split(f.from).length !== 2) continue;
      source = source.replace(f.from, f.to);
      appliedFixes.add(f.name);
    }
    if (appliedFixes.size > 0) {
      type Internal = Module & { _compile(code: string, filename: string): void };
      const m = new Module(file) as Internal;
      m.filename = file;
      m.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(dirname(file));
      m._compile(source, file);
      m.loaded = true;
      require.cache[file] = m;
    }
  }
  return require('postgres') as typeof postgresNs;
}

export const postgres: typeof postgresNs = load();
