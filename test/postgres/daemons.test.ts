// Two daemon processes (`m4a serve --store postgres://…?schema=…`, each with its own data
// directory and port) sharing one database: peers, mail and waits across them, the wake latency
// from a send on one to a parked inbox on the other, concurrent senders on both with a reader that
// must see every message exactly once and in order, and pg_terminate_backend mid-load.
import assert from 'node:assert/strict';
import { serveProcess } from '../support/serve-process.js';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { MailClient } from '../../src/client/http-client.js';
import { MailError } from '../../src/wire/errors.js';
import type { MessageOut } from '../../src/wire/ops.js';
import { admin, freshSchema, noteFailure, percentile, pgSkip, sleep, terminateBackends } from './support/pg.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

interface Daemon {
  child: ChildProcess;
  url: string;
  dir: string;
  exited: Promise<number | null>;
  stderr: () => string;
}

async function serve(dir: string, spec: string): Promise<Daemon> {
  const d = await serveProcess(['--data-dir', dir, '--port', '0', '--store', spec], { ...process.env, M4A_LOG_LEVEL: 'warn' });
  return { ...d, dir };
}

function m4a(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function addAccount(dir: string, id: string): string {
  const r = m4a(['admin', 'account', 'add', id, '--data-dir', dir, '--json']);
  assert.equal(r.status, 0, r.stderr);
  return (JSON.parse(r.stdout) as { secret: string }).secret;
}

/** Reads a mailbox from the start with a cursor, as an agent would, retrying refused reads. */
async function walk(c: MailClient, expect: number, o: { retry?: boolean } = {}): Promise<MessageOut[]> {
  const seen: MessageOut[] = [];
  let after: string | undefined;
  const deadline = Date.now() + 120_000;
  while (seen.length < expect && Date.now() < deadline) {
    try {
      const r = await c.inbox({ include_acked: true, limit: 20, wait_secs: 5, ...(after ? { after } : {}) });
      seen.push(...r.messages);
      after = r.next_cursor ?? after;
    } catch (err) {
      if (!o.retry) throw err;
      await sleep(50);
    }
  }
  return seen;
}

describe('postgres: two daemon processes sharing one database', { skip: pgSkip }, () => {
  let schema: string;
  let spec: string;
  let d1: Daemon;
  let d2: Daemon;
  const dirs: string[] = [];
  const clients: MailClient[] = [];
  const client = (d: Daemon, token: string) => {
    const c = new MailClient({ url: d.url, token, timeoutMs: 60_000 });
    clients.push(c);
    return c;
  };
  let secrets: Record<string, string> = {};

  before(async () => {
    assert.ok(existsSync(CLI), 'run `npm run build` first (npm test does)');
    ({ schema, spec } = await freshSchema('daemons'));
    for (let i = 0; i < 3; i++) dirs.push(mkdtempSync(join(tmpdir(), `m4a-pg-d${i + 1}-`)));
    d1 = await serve(dirs[0]!, spec);
    // The operator account lives in the shared database: the second daemon gets the first one's
    // credential (otherwise it would rotate it; see the todo test at the end).
    copyFileSync(join(dirs[0]!, 'operator.token'), join(dirs[1]!, 'operator.token'));
    d2 = await serve(dirs[1]!, spec);
    secrets = Object.fromEntries(['alice', 'bob', 'carol', 'dave', 'erin'].map((id) => [id, addAccount(dirs[0]!, id)]));
    assert.equal(m4a(['admin', 'room', 'add', 'team', '--data-dir', dirs[1]!]).status, 0, 'the operator credential works on both');
    for (const id of ['alice', 'bob']) assert.equal(m4a(['admin', 'room', 'member', 'add', 'team', id, '--data-dir', dirs[0]!]).status, 0);
  });

  after(async () => {
    for (const c of clients) c.close();
    for (const d of [d1, d2]) {
      if (!d || d.child.exitCode !== null) continue;
      d.child.kill('SIGTERM');
      await d.exited;
    }
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const kept = (fn: () => Promise<void>) => async (): Promise<void> => {
    try {
      await fn();
    } catch (err) {
      noteFailure();
      process.stderr.write(`# daemon 1 stderr:\n${d1?.stderr()}\n# daemon 2 stderr:\n${d2?.stderr()}\n`);
      throw err;
    }
  };

  it(
    'agents on either daemon see each other in peers and exchange mail; a parked wait on B answers a send on A',
    kept(async () => {
      const alice = client(d1, secrets.alice!);
      const bob = client(d2, secrets.bob!);
      const a = await alice.whoami();
      const b = await bob.whoami();
      assert.ok(a.session && b.session);
      const fromB = await bob.directory({ detail: true, include_ended: true });
      const fromA = await alice.directory({ detail: true, include_ended: true });
      for (const dir of [fromA, fromB]) {
        const sessionsOf = (id: string) => dir.accounts.find((x) => x.id === id)?.sessions ?? [];
        assert.ok(
          sessionsOf('alice').some((s) => s.address.endsWith(a.session!) && s.live),
          'alice is in the directory on both daemons, live',
        );
        assert.ok(
          sessionsOf('bob').some((s) => s.address.endsWith(b.session!) && s.live),
          'bob too',
        );
      }
      const start = await bob.inbox({});
      const parked = bob.inbox({ wait_secs: 20, ...(start.next_cursor ? { after: start.next_cursor } : {}) });
      await sleep(100);
      const sent = await alice.send({ to: 'bob', subject: 'across', body: 'from A to B' });
      const got = await parked;
      assert.deepEqual(
        got.messages.map((m) => m.message_id),
        [sent.message_id],
      );
      // A reply back, to the room both are in, and an ack.
      const reply = await bob.send({ to: '#team', subject: 're: across', body: 'from B', reply_to: sent.message_id });
      const aliceInbox = await alice.inbox({ wait_secs: 5 });
      assert.ok(aliceInbox.messages.some((m) => m.message_id === reply.message_id && m.thread_id === sent.thread_id));
      await bob.ack(sent.message_id);
      assert.equal((await bob.unread()).unread, (await bob.inbox({ wait_secs: 0 })).messages.length);
    }),
  );

  it(
    'measures the cross-daemon wake latency (send on A to answer of a parked wait on B)',
    kept(async () => {
      const carol = client(d1, secrets.carol!);
      const dave = client(d2, secrets.dave!);
      const daveSameHost = client(d1, secrets.dave!);
      const measure = async (reader: MailClient, n: number): Promise<number[]> => {
        let cursor = (await reader.inbox({ include_acked: true, limit: 200 })).next_cursor ?? undefined;
        const out: number[] = [];
        for (let i = 0; i < n; i++) {
          const parked = reader.inbox({ wait_secs: 20, include_acked: true, ...(cursor ? { after: cursor } : {}) });
          await sleep(15);
          const t0 = performance.now();
          const s = await carol.send({ to: 'dave', subject: `ping ${i}`, body: 'x' });
          const r = await parked;
          out.push(performance.now() - t0);
          assert.deepEqual(
            r.messages.map((m) => m.message_id),
            [s.message_id],
          );
          cursor = r.next_cursor ?? cursor;
        }
        return out;
      };
      await measure(dave, 5); // warm up both daemons' connections
      const cross = await measure(dave, 100);
      const local = await measure(daveSameHost, 100);
      const fmt = (xs: number[]) => `p50 ${percentile(xs, 50).toFixed(2)} ms, p99 ${percentile(xs, 99).toFixed(2)} ms, max ${Math.max(...xs).toFixed(2)} ms`;
      process.stderr.write(`# wake latency, send on daemon A -> parked inbox on daemon B (n=100): ${fmt(cross)}\n`);
      process.stderr.write(`# wake latency, same daemon for comparison (n=100): ${fmt(local)}\n`);
      assert.ok(percentile(cross, 50) < 250, `cross-daemon p50 within milliseconds, not a poll interval (${fmt(cross)})`);
    }),
  );

  it(
    'concurrent senders on both daemons: a reader walking its cursor sees every message exactly once, in order',
    kept(async () => {
      const senders = [client(d1, secrets.alice!), client(d2, secrets.bob!), client(d1, secrets.carol!), client(d2, secrets.dave!)];
      const reader = client(d2, secrets.erin!);
      const perLoop = 20;
      const loops = senders.flatMap((c, ci) =>
        [0, 1].map(async (li) => {
          const ids: string[] = [];
          for (let i = 0; i < perLoop; i++) ids.push((await c.send({ to: 'erin', subject: `c${ci}-l${li}-${i}`, body: 'load' })).message_id);
          return ids;
        }),
      );
      const total = senders.length * 2 * perLoop;
      const walking = walk(reader, total);
      const sent = (await Promise.all(loops)).flat();
      const seen = await walking;
      const ids = seen.map((m) => m.message_id);
      assert.equal(new Set(ids).size, ids.length, 'no message seen twice');
      assert.deepEqual([...ids].sort(), [...sent].sort(), 'every message seen');
      // The walk's order is the mailbox order (seq order), as a fresh read from the start lists it.
      const full = await walk(client(d1, secrets.erin!), total);
      assert.deepEqual(
        ids,
        full.map((m) => m.message_id),
        'in order, the same on both daemons',
      );
      // Each sender's messages appear in the order it sent them.
      const pos = new Map(ids.map((id, i) => [id, i]));
      for (const group of await Promise.all(loops)) for (let i = 1; i < group.length; i++) assert.ok(pos.get(group[i]!)! > pos.get(group[i - 1]!)!);
    }),
  );

  it(
    "survives pg_terminate_backend on the daemons' connections mid-load: no acknowledged send lost, none doubled",
    kept(async () => {
      const sql = admin();
      const senders = [client(d1, secrets.alice!), client(d2, secrets.bob!), client(d1, secrets.carol!), client(d2, secrets.dave!)];
      const reader = client(d2, secrets.bob!);
      // bob reads his own mailbox: start after what is already there.
      const start = (await reader.inbox({ include_acked: true, limit: 200 })).messages.length;
      const perLoop = 15;
      let refused = 0;
      let stop = false;
      const acknowledged: string[] = [];
      const loops = senders.map(async (c, ci) => {
        for (let i = 0; i < perLoop; i++) {
          const key = `kill-${ci}-${i}`;
          for (let attempt = 1; ; attempt++) {
            try {
              const r = await c.send({ to: 'bob', subject: key, body: 'under fire', idempotency_key: key });
              acknowledged.push(r.message_id);
              break;
            } catch (err) {
              // store_unavailable while the connections are down: retry with the same key
              refused++;
              if (attempt >= 100) throw new Error(`send ${key} still refused after ${attempt} attempts: ${String(err)}`, { cause: err });
              await sleep(20);
            }
          }
        }
      });
      let kills = 0;
      const killer = (async () => {
        while (!stop) {
          await sleep(250);
          kills += await terminateBackends(sql, `m4a:${schema}`);
        }
      })();
      await Promise.all(loops);
      stop = true;
      await killer;
      process.stderr.write(`# pg_terminate_backend: ${kills} backends killed, ${refused} sends refused and retried\n`);
      assert.ok(kills > 0, 'connections were killed during the load');
      const total = senders.length * perLoop;
      const seen = (await walk(client(d1, secrets.bob!), start + total, { retry: true })).slice(start);
      const subjects = seen.map((m) => m.subject);
      assert.equal(new Set(subjects).size, subjects.length, 'no send doubled (idempotency keys held across retries)');
      assert.equal(subjects.length, total, 'every send stored once');
      const ids = new Set(seen.map((m) => m.message_id));
      for (const id of acknowledged) assert.ok(ids.has(id), `acknowledged send ${id} is there`);
      // LISTEN came back on both daemons: a wait on B still answers a send on A at once.
      let after: string | undefined;
      for (let refused = 0; ;) {
        // A pooled connection the kills left dead may still refuse one read (store_unavailable:
        // the store retries a read once); a client retries it, as walk() does.
        let r;
        try {
          r = await reader.inbox({ include_acked: true, limit: 200, ...(after ? { after } : {}) });
        } catch (err) {
          if (!(err instanceof MailError && err.code === 'store_unavailable') || ++refused > 20) throw err;
          await sleep(50);
          continue;
        }
        if (r.messages.length === 0) break;
        after = r.next_cursor ?? after;
      }
      // LISTEN came back on both daemons (each holds one connection whose statement is LISTEN) ...
      let listening = 0;
      for (let i = 0; i < 100 && listening < 2; i++) {
        const [r] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE application_name = ${`m4a:${schema}`} AND query ILIKE 'listen %'`;
        listening = r?.n ?? 0;
        if (listening < 2) await sleep(100);
      }
      assert.equal(listening, 2, 'both daemons LISTEN again');
      // ... and a wait on B answers a send on A.
      const parked = reader.inbox({ wait_secs: 20, include_acked: true, ...(after ? { after } : {}) });
      await sleep(100);
      const s = await client(d1, secrets.carol!).send({ to: 'bob', subject: 'after the storm', body: 'x' });
      // Timed from the send's answer: right after the storm the send itself can take seconds on a
      // loaded machine (its pool reconnects), and that is not the wake. A wait that was not woken
      // would answer empty at its 20 s; the bound only says the feed (NOTIFY or its 2 s poll) did it.
      const t0 = Date.now();
      assert.deepEqual(
        (await parked).messages.map((m) => m.message_id),
        [s.message_id],
      );
      assert.ok(Date.now() - t0 < 10_000, `woken (${Date.now() - t0} ms after the send's answer)`);
    }),
  );

  it(
    "a second daemon started without the operator credential does not rotate the first one's",
    kept(async () => {
      const d3 = await serve(dirs[2]!, spec);
      try {
        const r = m4a(['admin', 'account', 'list', '--data-dir', dirs[0]!, '--json']);
        assert.equal(r.status, 0, `daemon 1's operator credential still works: ${r.stderr}`);
        assert.notEqual(readFileSync(join(dirs[2]!, 'operator.token'), 'utf8'), '');
      } finally {
        d3.child.kill('SIGTERM');
        await d3.exited;
      }
    }),
  );
});
