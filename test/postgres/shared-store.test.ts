// What sharing one database between daemons adds, at the store level: several PostgresStore
// instances on one schema stand for several daemons.
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import { migrate, MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/postgres-store.js';
import { parsePostgresSpec } from '../../src/store/postgres/spec.js';
import { keyOfAccount, type CommitEvent, type StoredMessage } from '../../src/store/types.js';
import { A, message, q, scope, send, session } from '../support/store-conformance.js';
import { admin, freshSchema, noteFailure, percentile, PG_URL, pgSkip, sleep, specFor, terminateBackends } from './support/pg.js';

const opened: PostgresStore[] = [];
async function open(spec: string, over: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
  const s = await openPostgresStore({ spec, max: 4, ...over });
  opened.push(s);
  return s;
}
after(async () => {
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

/** Wraps a test body so a failure keeps the file's schemas for a look. */
const kept = (fn: () => Promise<void>) => async (): Promise<void> => {
  try {
    await fn();
  } catch (err) {
    noteFailure();
    throw err;
  }
};

/** Walks a key's mail with a cursor the way a reader does (page after the last seq seen). */
async function walk(store: PostgresStore, account: string, until: number, seen: number[], pauseMs = 0): Promise<void> {
  let cursor = 0;
  while (seen.length < until) {
    const page = await store.page(scope(account), q({ after: cursor, limit: 7 }));
    for (const m of page) seen.push(m.seq);
    const last = page[page.length - 1];
    if (last) cursor = last.seq;
    else await sleep(2);
    if (pauseMs) await sleep(Math.random() * pauseMs);
  }
}

describe('postgres: several stores on one schema', { skip: pgSkip }, () => {
  let spec: string;
  before(async () => {
    spec = (await freshSchema('shared')).spec;
  });

  it(
    'never lets a cursor pass a lower seq that a slower transaction has not committed yet',
    kept(async () => {
      const { spec } = await freshSchema('gap');
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let stalled!: () => void;
      const inside = new Promise<void>((r) => (stalled = r));
      // Daemon A's first batch takes its seq, then stalls before COMMIT (a slow transaction).
      let first = true;
      const slow = await open(spec, {
        beforeCommit: async () => {
          if (!first) return;
          first = false;
          stalled();
          await held;
        },
      });
      const fast = await open(spec);
      const reader = await open(spec);
      const events: number[] = [];
      reader.onCommit((e) => events.push(e.seq));

      const a = slow.appendMessage(message(A('bob')), 0);
      await inside; // A holds seq 1, uncommitted
      let bDone = false;
      const b = fast.appendMessage(message(A('bob')), 0).then((o) => {
        bDone = true;
        return o;
      });
      // While A is in flight, B cannot commit a higher seq, and no reader sees anything past the gap.
      await sleep(300);
      assert.equal(bDone, false, 'the faster daemon waits for the seq order, it does not commit past the gap');
      assert.deepEqual(await reader.page(scope('bob'), q({ after: 0 })), []);
      assert.deepEqual(await reader.messagesAfter(A('bob'), 0, 10), []);
      assert.equal(await reader.headSeq(), 0);
      assert.deepEqual(events, []);
      release();
      const [oa, ob] = await Promise.all([a, b]);
      assert.equal(oa.message.seq, 1);
      assert.equal(ob.message.seq, 2, 'the faster transaction gets the next seq once the slower one committed');
      const seen: number[] = [];
      await walk(reader, 'bob', 2, seen);
      assert.deepEqual(seen, [1, 2]);
      for (let i = 0; i < 100 && events.length < 2; i++) await sleep(10);
      assert.deepEqual(events, [1, 2], 'events come once each, in seq order');
    }),
  );

  it(
    'concurrent senders on three daemons, slow commits at random: readers see every message once, in order',
    kept(async () => {
      const { spec } = await freshSchema('race');
      const stall = async () => {
        if (Math.random() < 0.3) await sleep(Math.random() * 15);
      };
      const daemons = [await open(spec, { beforeCommit: stall }), await open(spec, { beforeCommit: stall }), await open(spec, { beforeCommit: stall })];
      const reader = await open(spec);
      const events: CommitEvent[] = [];
      reader.onCommit((e) => events.push(e));
      const perSender = 40;
      const senders = daemons.flatMap((d, di) =>
        [0, 1].map(async (si) => {
          const out: StoredMessage[] = [];
          for (let i = 0; i < perSender; i++) {
            out.push(await send(d, A('bob'), { subject: `d${di}-s${si}-${i}` }));
            if (Math.random() < 0.2) await sleep(Math.random() * 3);
          }
          return out;
        }),
      );
      const total = daemons.length * 2 * perSender;
      const walks = [[], [], []] as number[][];
      const walkers = walks.map((seen, i) => walk(reader, 'bob', total, seen, i));
      const sent = (await Promise.all(senders)).flat();
      await Promise.all(walkers);
      const expected = Array.from({ length: total }, (_, i) => i + 1);
      assert.deepEqual(
        sent.map((m) => m.seq).sort((x, y) => x - y),
        expected,
        'dense seqs, one per send',
      );
      for (const seen of walks) assert.deepEqual(seen, expected, 'each walker saw every seq exactly once, in order');
      for (let i = 0; i < 300 && events.length < total; i++) await sleep(10);
      assert.deepEqual(
        events.map((e) => e.seq),
        expected,
        'commit events: every seq once, in order, across daemons',
      );
      // Each sender's own messages kept their call order.
      const bySubject = new Map(sent.map((m) => [m.subject, m.seq]));
      for (let di = 0; di < 3; di++)
        for (let si = 0; si < 2; si++) for (let i = 1; i < perSender; i++) assert.ok((bySubject.get(`d${di}-s${si}-${i}`) ?? 0) > (bySubject.get(`d${di}-s${si}-${i - 1}`) ?? 0));
    }),
  );

  it(
    'the same idempotency key sent to two daemons at once yields one message',
    kept(async () => {
      const one = await open(spec);
      const two = await open(spec);
      for (let round = 0; round < 20; round++) {
        const key = `k-${round}-${Math.random()}`;
        const m = (fp: string) => message(A('bob'), { fromAccount: 'alice', idempotencyKey: key, fingerprint: fp, createdAt: 1_000 });
        const fps = round % 2 === 0 ? ['same', 'same'] : ['f1', 'f2'];
        const [x, y] = await Promise.all([one.appendMessage(m(fps[0] as string), 0), two.appendMessage(m(fps[1] as string), 0)]);
        const kinds = [x.kind, y.kind].sort();
        assert.deepEqual(kinds, round % 2 === 0 ? ['created', 'duplicate'] : ['conflict', 'created'], `round ${round}`);
        assert.equal(x.message.id, y.message.id, 'both answer with the one stored message');
        const [r] = await one.sql<{ n: number }[]>`SELECT count(*) AS n FROM messages WHERE idempotency_key = ${key}`;
        assert.equal(r?.n, 1);
      }
    }),
  );

  it(
    'migrates exactly once when many daemons start at once on a fresh schema',
    kept(async () => {
      const { schema } = await freshSchema('migrate');
      const { url } = parsePostgresSpec(specFor(schema));
      const clients = Array.from({ length: 8 }, () =>
        postgres(url, { max: 1, onnotice: () => undefined, connection: { search_path: `"${schema}"`, application_name: 'm4a-migrate-race' } }),
      );
      try {
        const applied = await Promise.all(clients.map((c) => migrate(c, schema)));
        const all = applied.flat().sort((a, b) => a - b);
        assert.deepEqual(
          all,
          MIGRATIONS.map((_, i) => i + 1),
          'each migration applied by exactly one caller',
        );
        assert.equal(applied.filter((a) => a.length > 0).length, 1, 'one caller did all the work');
        const rows = await clients[0]!<{ version: number }[]>`SELECT version FROM m4a_migrations ORDER BY version`;
        assert.deepEqual(
          rows.map((r) => r.version),
          MIGRATIONS.map((_, i) => i + 1),
        );
        // Stores opening at once on the migrated schema all work.
        const stores = await Promise.all([open(specFor(schema)), open(specFor(schema)), open(specFor(schema))]);
        assert.equal((await send(stores[1], A('bob'))).seq, 1);
      } finally {
        for (const c of clients) await c.end();
      }
    }),
  );

  it(
    'wakes another daemon by NOTIFY, and catches up after its listening connection is killed',
    kept(async () => {
      const { spec } = await freshSchema('listen');
      const a = await open(spec);
      const b = await open(spec, { pollMs: 60_000, applicationName: 'm4a-listen-b' }); // no poll: only LISTEN
      const got: CommitEvent[] = [];
      let wake: (() => void) | null = null;
      b.onCommit((e) => {
        got.push(e);
        wake?.();
      });
      const lat: number[] = [];
      for (let i = 0; i < 30; i++) {
        const woken = new Promise<void>((r) => (wake = r));
        const t0 = performance.now();
        await send(a, A('bob'));
        await woken;
        lat.push(performance.now() - t0);
      }
      assert.deepEqual(
        got.map((e) => e.seq),
        Array.from({ length: 30 }, (_, i) => i + 1),
      );
      assert.deepEqual(got[0]?.keys, [A('bob')]);
      process.stderr.write(`# store level, append on A (to commit) -> onCommit on B (n=30): p50 ${percentile(lat, 50).toFixed(2)} ms, p99 ${percentile(lat, 99).toFixed(2)} ms\n`);

      // Kill b's connections (the LISTEN one included); mail sent meanwhile must still be announced.
      const sql = admin();
      const listensBefore = b.stats().listens;
      assert.ok((await terminateBackends(sql, 'm4a-listen-b')) >= 1);
      for (let i = 0; i < 5; i++) await send(a, keyOfAccount('carol'));
      for (let i = 0; i < 500 && got.length < 35; i++) await sleep(10);
      assert.deepEqual(
        got.map((e) => e.seq),
        Array.from({ length: 35 }, (_, i) => i + 1),
        'caught up after the re-LISTEN',
      );
      assert.ok(b.stats().listens > listensBefore, 'listened again');
      // And it still wakes at once afterwards.
      const woken = new Promise<void>((r) => (wake = r));
      await send(a, A('bob'));
      await woken;
      assert.equal(got.at(-1)?.seq, 36);
    }),
  );

  it(
    "reports a host's sessions as ended once its heartbeat expired, and live again when it returns",
    kept(async () => {
      const { spec } = await freshSchema('hosts');
      const ha = await open(spec);
      const hb = await open(spec);
      await ha.attachHost('host-a', { ttlMs: 400, everyMs: 100 });
      await hb.attachHost('host-b', { ttlMs: 400, everyMs: 100 });
      await ha.registerSession(session('alice', 's-a', { hostId: 'host-a' }));
      await hb.registerSession(session('bob', 's-b', { hostId: 'host-b' }));
      await sleep(600);
      assert.equal((await hb.getSession('alice', 's-a'))?.endedAt, null, 'a heartbeating host is live');
      ha.detachHost(); // host A's daemon stops (or its machine dies)
      await sleep(700);
      const seenFromB = await hb.getSession('alice', 's-a');
      assert.ok(seenFromB?.endedAt !== null && (seenFromB?.endedAt ?? 0) > 0, 'ended for the other daemons');
      assert.ok((await hb.listSessions()).find((s) => s.id === 's-a')?.endedAt, 'in the directory too');
      assert.equal((await ha.getSession('alice', 's-a'))?.endedAt, null, 'its own daemon judges its sessions itself');
      assert.equal((await ha.getSession('bob', 's-b'))?.endedAt, null, 'B is still alive');
      // Nothing was written: the host comes back, its sessions are live again.
      await ha.attachHost('host-a', { ttlMs: 400, everyMs: 100 });
      assert.equal((await hb.getSession('alice', 's-a'))?.endedAt, null);
      // A host gone longer than the retention is pruned like ended sessions.
      ha.detachHost();
      await sleep(700);
      assert.equal(await hb.pruneSessions(Date.now() + 10_000), 1);
      assert.equal(await hb.getSession('alice', 's-a'), null);
      assert.notEqual(await hb.getSession('bob', 's-b'), null);
    }),
  );

  it(
    'rejects promptly while the database is unreachable, then recovers and catches up',
    kept(async () => {
      const { schema } = await freshSchema('outage');
      const proxy = await tcpProxy(new URL(PG_URL));
      try {
        const u = new URL(PG_URL);
        u.host = `127.0.0.1:${proxy.port}`;
        u.searchParams.set('schema', schema);
        const viaProxy = await open(u.toString(), { connectTimeoutSec: 2, pollMs: 200 });
        const direct = await open(specFor(schema));
        const got: number[] = [];
        viaProxy.onCommit((e) => got.push(e.seq));
        await send(viaProxy, A('bob'));
        proxy.down();
        const t0 = Date.now();
        await assert.rejects(send(viaProxy, A('bob')), 'an append while down rejects');
        await assert.rejects(viaProxy.page(scope('bob'), q()), 'a read while down rejects');
        assert.ok(Date.now() - t0 < 8_000, `rejected within the timeouts (${Date.now() - t0} ms)`);
        await send(direct, A('bob')); // another daemon keeps working meanwhile: seq 2
        await proxy.up();
        let ok = false;
        for (let i = 0; i < 100 && !ok; i++) {
          try {
            await send(viaProxy, A('bob'));
            ok = true;
          } catch {
            await sleep(100);
          }
        }
        assert.ok(ok, 'appends work again once the database is back');
        for (let i = 0; i < 300 && got.length < 3; i++) await sleep(10);
        assert.deepEqual(got, [1, 2, 3], "the other daemon's commit made while down is announced, in order");
        assert.deepEqual(
          (await viaProxy.page(scope('bob'), q())).map((m) => m.seq),
          [1, 2, 3],
        );
      } finally {
        await proxy.close();
      }
    }),
  );
});

/** A TCP proxy to the database that can play dead: down() drops every connection and refuses new ones. */
async function tcpProxy(target: URL): Promise<{ port: number; down(): void; up(): Promise<void>; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let server: Server;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = connect({ host: target.hostname, port: Number(target.port || 5432) });
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => undefined);
        }
        client.pipe(upstream);
        upstream.pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      server.listen(port, '127.0.0.1', () => {
        port = (server.address() as { port: number }).port;
        resolve();
      });
    });
  await listen();
  return {
    port,
    down() {
      server.close();
      for (const s of sockets) s.destroy();
    },
    up: listen,
    close: async () => {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}
