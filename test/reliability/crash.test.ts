// Crash test: the real daemon (`m4a serve`, its own process) is killed with SIGKILL at seeded
// random moments while concurrent senders send with idempotency keys, restarted on the same data
// directory, port and store, and every unacknowledged send retried with the same key
// (crash-rounds.ts). At the end every acknowledged message is present exactly once, a retry of a
// committed send returns the original id, and each reader's cursor walk, continued across the
// crashes, sees every message once, in send order (crash-verdict.ts). Once on SQLite, once on
// PostgreSQL (a fresh schema). M4A_CRASH_ROUNDS (default 3) rounds each, M4A_CRASH_SEED replays.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshSchema, kept, pgSkip } from '../postgres/support/pg.js';
import { CLI, addAccounts, serve, stop, type Daemon } from './crash-daemon.js';
import { crashRounds } from './crash-rounds.js';
import { freePort } from './helpers.js';

const ROUNDS = Number(process.env.M4A_CRASH_ROUNDS ?? 3);
const SEED = Number(process.env.M4A_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
const debug = (s: string) => {
  if (process.env.M4A_CRASH_DEBUG) process.stderr.write(`crash: ${s}\n`);
};

/** One store's suite: a fresh data directory (and schema), the accounts, then the rounds. */
function crashSuite(name: 'sqlite' | 'postgres', skip: string | false) {
  describe(`crash on ${name}: SIGKILL during concurrent idempotent sends (seed ${SEED})`, { skip }, () => {
    let dir: string;
    let port: number;
    let store: string | undefined;
    const daemon = { d: null as Daemon | null };
    let secrets: Map<string, string>;

    before(async () => {
      assert.ok(existsSync(CLI), 'run `npm run build` first (npm test does)');
      // On tmpfs where there is one: SIGKILL kills the process, not the kernel, so what must survive
      // is what was written before the acknowledgement; that holds on tmpfs as on a disk (fsync only
      // matters for power loss, which no test here can cause), and the rounds run many times faster.
      dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), `m4a-crash-${name}-`));
      if (name === 'postgres') store = (await freshSchema('crash')).spec;
      port = await freePort();
      daemon.d = await serve(dir, port, store);
      secrets = await addAccounts(`http://127.0.0.1:${port}`, dir);
    });
    after(async () => {
      await stop(daemon.d);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it(
      `${ROUNDS} rounds: every acknowledged send present exactly once, retries return the original, cursor walks see each once in order`,
      kept(async () => {
        const t0 = performance.now();
        const r = await crashRounds({ dir, port, store, rounds: ROUNDS, seed: SEED, door: `crash-${name}`, secrets, daemon: daemon as { d: Daemon }, debug });
        debug(`${name}: ${ROUNDS} rounds, ${r.messages} messages (${r.committedUnacked} committed unacknowledged) in ${Math.round(performance.now() - t0)} ms`);
      }),
    );
  });
}

crashSuite('sqlite', false);
crashSuite('postgres', pgSkip);
