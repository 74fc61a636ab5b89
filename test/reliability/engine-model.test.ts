// Model-based property test of the engine against every store: random sequences of sends (to
// accounts, sessions and rooms, with replies and idempotency keys), acks by any caller, inbox pages
// with cursors, gets, room membership changes and waits, each answer compared with a small
// reference model of the semantics table in docs/protocol.md:
//  - account mail reaches every session of the account, session mail only that session, room mail
//    every current member (its whole history), none after removal;
//  - account and room mail is acknowledged once per account, session mail per session;
//  - pages come in send order; unread counts match; a second ack returns the first time;
//  - a wait started before a send is answered with that send when the caller may read it; without
//    a cursor a wait ends only on mail its reader was not shown (the shown mark: the highest
//    message any page of that reader returned), and its answer lists the unacknowledged mail;
//  - tasks move only as docs/tasks.md says, each change one message in the task's thread carrying
//    its state and version (engine-model-tasks.ts); a second, seeded property is mostly tasks.
// The world and the model are in engine-model-world.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { encodeCursor } from '../../src/engine/cursor.js';
import type * as W from '../../src/wire/ops.js';
import type { Store } from '../../src/store/types.js';
import { createMemoryStore, openSqliteStore } from '../../src/store/index.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { admin, freshSchema, pgSkip } from '../postgres/support/pg.js';
import { tally } from '../support/soak-tally.js';
import { Model, flush, makeWorld, type Cmd } from './engine-model-world.js';
import { commands, finalCheck, taskCommands } from './engine-model-mail.js';

const RUNS = Number(process.env.M4A_MODEL_RUNS ?? 0) || 100;
const SEED = process.env.M4A_MODEL_SEED ? { seed: Number(process.env.M4A_MODEL_SEED) } : {};
// The task property replays one fixed seed unless M4A_MODEL_SEED names another (as the mail property does).
const TASK_RUNS = Math.ceil(RUNS / 2);
const TASK_SEED = { seed: process.env.M4A_MODEL_SEED ? Number(process.env.M4A_MODEL_SEED) : 0x7a5c14 };

type Kind = 'memory' | 'sqlite' | 'postgres';
let runNo = 0;

/** One migrated PostgreSQL schema for the file, emptied before each sequence: a schema and its
 *  migrations cost about half a second, the emptying a few milliseconds. */
let pg: { schema: string; spec: string } | null = null;
let pgAdmin: ReturnType<typeof admin> | null = null;
async function emptyPostgres(): Promise<string> {
  if (!pg) {
    pg = await freshSchema('model');
    await (await openPostgresStore({ spec: pg.spec, max: 1 })).close();
  }
  // The file's admin connection: test/postgres/support/pg.ts ends it after the file.
  const sql = (pgAdmin ??= admin());
  // Everything but the schema's version and identity, and the head row at 0 as migration 1 left it.
  const tables = await sql<{ t: string }[]>`SELECT tablename AS t FROM pg_tables WHERE schemaname = ${pg.schema}
    AND tablename NOT IN ('meta', 'm4a_migrations', 'message_head')`;
  await sql.unsafe(`TRUNCATE ${tables.map((r) => `"${pg!.schema}"."${r.t}"`).join(', ')} RESTART IDENTITY CASCADE`);
  await sql.unsafe(`UPDATE "${pg.schema}".message_head SET seq = 0`);
  return pg.spec;
}

/** A fresh store for one sequence: SQLite files on tmpfs where there is one (this test checks the
 *  rules, not fsync: the crash test does), the emptied schema on the PostgreSQL server. */
async function openStore(kind: Kind, dir: string): Promise<Store> {
  if (kind === 'memory') return createMemoryStore();
  if (kind === 'sqlite') return openSqliteStore({ path: join(dir, `run-${++runNo}.db`) });
  return openPostgresStore({ spec: await emptyPostgres(), max: 2 });
}

for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
  describe(`engine model: ${kind} store`, { skip: kind === 'postgres' ? pgSkip : false }, () => {
    let dir: string;
    before(() => {
      dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'm4a-model-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    const property = (cmds: fc.Arbitrary<Iterable<Cmd>>) =>
      fc.asyncProperty(cmds, async (cmds) => {
        const store = await openStore(kind, dir);
        try {
          const real = await makeWorld(store, kind === 'postgres');
          const model = new Model();
          await fc.asyncModelRun(() => ({ model, real }), cmds);
          await finalCheck(model, real);
          await real.engine.close();
          tally(`model-${kind}`).rounds++;
        } finally {
          await store.close();
        }
      });

    it(`matches the reference model over ${RUNS} random sequences of up to 30 operations`, async () => {
      await fc.assert(property(fc.commands(commands, { maxCommands: 30 })), { numRuns: RUNS, includeErrorInReport: true, ...SEED });
    });

    it(`moves tasks only as the rules say over ${TASK_RUNS} seeded sequences of up to 40 operations`, async () => {
      await fc.assert(property(fc.commands(taskCommands, { maxCommands: 40, size: 'medium' })), { numRuns: TASK_RUNS, includeErrorInReport: true, ...TASK_SEED });
    });
  });
}

describe('engine model: regressions found by the model', () => {
  for (const kind of ['memory', 'sqlite'] as const) {
    it(`${kind}: a woken wait does not bring back mail acknowledged before it was answered`, async () => {
      // Account mail is acknowledged once for the whole account. Session a2 sends to its own
      // account and acknowledges at once; session a1 was parked on a pending page (no
      // include_acked): the query is the truth, so a1 must stay parked, not receive the message
      // with acked_at: null.
      const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'm4a-model-'));
      const store = kind === 'memory' ? createMemoryStore() : openSqliteStore({ path: join(dir, 'r.db') });
      try {
        const real = await makeWorld(store);
        const a1 = real.callers.get('a1')!;
        const a2 = real.callers.get('a2')!;
        const head = encodeCursor(await store.headSeq());
        let settled: W.InboxResponse | null = null;
        const wait = real.engine.inbox(a1, { wait_secs: 10, after: head });
        void wait.then((v) => (settled = v));
        await flush();
        const sent = await real.engine.send(a2, { to: { kind: 'direct', participant: 'alice' }, subject: 'handled at once', body: '' });
        await real.engine.ack(a2, { message_id: sent.message_id });
        await flush();
        assert.equal(settled, null, `answered with mail already acknowledged: ${JSON.stringify(settled)}`);
        real.clock.advance(10_000);
        assert.deepEqual((await wait).messages, []);
        await real.engine.close();
      } finally {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
