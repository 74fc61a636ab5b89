// Crash test: the real daemon (`m4a serve`, SQLite, its own process) is killed with SIGKILL at
// seeded random moments while concurrent senders send with idempotency keys; it is restarted on the
// same data directory and port (the dead daemon's lock must not block it), and every send whose
// acknowledgement never arrived is retried with the same key. At the end every acknowledged message
// is present exactly once, a retry of a committed send returns the original id, and each reader's
// cursor walk, continued across the crashes, sees every message once, in send order.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DaemonUnreachable, MailClient } from '../../src/client/http-client.js';
import { MailError } from '../../src/wire/errors.js';
import type { MessageOut } from '../../src/wire/ops.js';
import { freePort, rng } from './helpers.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const ROUNDS = Number(process.env.M4A_CRASH_ROUNDS ?? 3);
const dbg = (s: string) => {
  if (process.env.M4A_CRASH_DEBUG) process.stderr.write(`crash: ${s}\n`);
};
const SEED = Number(process.env.M4A_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));

interface Daemon {
  child: ChildProcess;
  pid: number;
  exited: Promise<number | null>;
}

async function serve(dataDir: string, port: number): Promise<Daemon> {
  const child = spawn(process.execPath, [CLI, 'serve', '--data-dir', dataDir, '--port', String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, M4A_LOG_LEVEL: 'warn' },
  });
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start within 20 s: ${err}`)), 20_000);
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (/listening on http:\/\//.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited ${code} (the killed daemon's lock blocked the restart?): ${err}`));
    });
  });
  return { child, pid: child.pid!, exited };
}

/** One logical message: its key never changes, whatever happens to its sends. */
interface Logical {
  key: string;
  lane: string;
  n: number;
  sender: string;
  to: string;
  subject: string;
  body: string;
  /** The id from the first acknowledgement received for this key. */
  ackedId: string | null;
  attempts: number;
  /** Before its retry: the id a reader found for this key after the crash, or null if none. */
  foundBeforeRetry?: string | null;
}

describe(`crash: SIGKILL during concurrent idempotent sends (seed ${SEED})`, () => {
  const rand = rng(SEED);
  const where = (s: string) => `${s} (seed ${SEED}; rerun with M4A_CRASH_SEED=${SEED})`;
  let dir: string;
  let port: number;
  let d: Daemon | null = null;
  let url: string;
  const secrets = new Map<string, string>();
  const SENDERS = ['s1', 's2', 's3'];
  const LANES_PER_SENDER = 2;
  const READERS = ['ra', 'rb'];
  const TARGETS = ['ra', 'rb', '#crash'];

  before(async () => {
    assert.ok(existsSync(CLI), 'run `npm run build` first (npm test does)');
    // On tmpfs where there is one: SIGKILL kills the process, not the kernel, so what must survive
    // is what was written before the acknowledgement; that holds on tmpfs as on a disk (fsync only
    // matters for power loss, which no test here can cause), and the rounds run many times faster.
    dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'm4a-crash-'));
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    d = await serve(dir, port);
    const op = new MailClient({ url, token: readFileSync(join(dir, 'operator.token'), 'utf8').trim() });
    for (const id of [...SENDERS, ...READERS]) secrets.set(id, (await op.admin.accountAdd({ id })).secret);
    await op.admin.roomAdd('crash', { open: true }); // the senders post without being members
    for (const r of READERS) await op.admin.memberAdd('crash', r);
    op.close();
  });
  after(async () => {
    if (d && d.child.exitCode === null) {
      d.child.kill('SIGTERM');
      await d.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${ROUNDS} rounds: every acknowledged send present exactly once, retries return the original, cursor walks see each once in order`, async () => {
    const lanes = SENDERS.flatMap((s) =>
      Array.from({ length: LANES_PER_SENDER }, (_, i) => ({ name: `${s}.l${i}`, sender: s, next: 0, pending: null as Logical | null, history: [] as Logical[] })),
    );
    const all = new Map<string, Logical>();
    const retriedAfterAck: { key: string; id: string }[] = [];
    /** Each reader's cursor and what its walks saw, continued across every crash. */
    const walks = new Map(READERS.map((r) => [r, { cursor: undefined as string | undefined, seen: [] as MessageOut[] }]));
    let kills = 0;
    let committedUnacked = 0;

    // One client per account for the whole test: its keep-alive pool drops the connections of a
    // killed daemon and connects afresh to the restarted one.
    const clients = new Map([...SENDERS, ...READERS].map((a) => [a, new MailClient({ url, token: secrets.get(a)!, timeoutMs: 10_000 })]));
    const continueWalk = async (r: string) => {
      const w = walks.get(r)!;
      const c = clients.get(r)!;
      for (let pages = 0; pages < 1000; pages++) {
        const p = await c.inbox({ include_acked: true, limit: 1 + Math.floor(rand() * 40), ...(w.cursor ? { after: w.cursor } : {}) });
        if (p.messages.length === 0) break;
        w.seen.push(...p.messages);
        w.cursor = p.next_cursor!;
      }
    };

    /** Sends a logical message once; true when acknowledged, false when the daemon went away. */
    const attempt = async (c: MailClient, m: Logical): Promise<boolean> => {
      m.attempts++;
      try {
        const r = await c.send({ to: m.to, subject: m.subject, body: m.body, correlation: m.key, idempotency_key: m.key });
        if (m.ackedId !== null) {
          assert.equal(r.message_id, m.ackedId, where(`a retry of acknowledged ${m.key} returns the original id`));
          assert.equal(r.duplicate, true, where(`a retry of acknowledged ${m.key} is a duplicate`));
        }
        if (m.attempts === 1) assert.equal(r.duplicate, false, where(`a first send of ${m.key} is new`));
        if (m.foundBeforeRetry !== undefined && m.ackedId === null) {
          // The unacknowledged send either committed before the crash (the retry must return that
          // message) or did not (the retry stores it now).
          assert.equal(r.duplicate, m.foundBeforeRetry !== null, where(`retry of ${m.key}: duplicate iff it had committed`));
          if (m.foundBeforeRetry !== null) assert.equal(r.message_id, m.foundBeforeRetry, where(`retry of ${m.key} returns the committed id`));
        }
        m.ackedId ??= r.message_id;
        return true;
      } catch (err) {
        if (err instanceof DaemonUnreachable) return false; // refused, reset or cut: unacknowledged
        if (err instanceof MailError) assert.fail(where(`send of ${m.key} refused by name: ${err.code} ${err.message}`));
        throw err;
      }
    };

    for (let round = 0; round <= ROUNDS; round++) {
      const last = round === ROUNDS;
      // Kill after a random number of acknowledgements in this round, sometimes a moment later.
      const killAfter = 10 + Math.floor(rand() * 90);
      const killDelayMs = rand() < 0.5 ? 0 : Math.floor(rand() * 15);
      let acks = 0;
      let killed = false;
      const kill = () => {
        if (killed || last) return;
        killed = true;
        const doKill = () => d!.child.kill('SIGKILL');
        if (killDelayMs === 0) doKill();
        else setTimeout(doKill, killDelayMs);
      };
      const runLane = async (lane: (typeof lanes)[number]) => {
        const c = clients.get(lane.sender)!;
        // First the send this lane could not get acknowledged before the last crash, same key.
        if (lane.pending) {
          if (!(await attempt(c, lane.pending))) return;
          lane.history.push(lane.pending);
          lane.pending = null;
          if (++acks >= killAfter) kill();
        }
        // Now and then, a retry of a send that was acknowledged: nothing new, the same id.
        if (lane.history.length && rand() < 0.5) {
          const old = lane.history[Math.floor(rand() * lane.history.length)]!;
          if (!(await attempt(c, old))) return;
          retriedAfterAck.push({ key: old.key, id: old.ackedId! });
        }
        const cap = last ? 5 : 200;
        for (let i = 0; i < cap && !(killed && d!.child.exitCode !== null); i++) {
          const n = lane.next++;
          const m: Logical = {
            key: `${lane.name}.n${n}`,
            lane: lane.name,
            n,
            sender: lane.sender,
            to: TARGETS[Math.floor(rand() * TARGETS.length)]!,
            subject: `round ${round} ${lane.name} #${n}`,
            body: `payload ${n} ${'x'.repeat(Math.floor(rand() * 200))}`,
            ackedId: null,
            attempts: 0,
          };
          all.set(m.key, m);
          if (!(await attempt(c, m))) {
            lane.pending = m;
            return;
          }
          lane.history.push(m);
          if (++acks >= killAfter) kill();
        }
      };
      const t0 = performance.now();
      await Promise.all(lanes.map(runLane));
      dbg(`round ${round}: lanes ${Math.round(performance.now() - t0)} ms, ${acks} acks (kill after ${killAfter})`);
      if (last) break;
      assert.ok(killed, where(`round ${round}: the daemon was killed mid-traffic`));
      await d!.exited;
      kills++;
      // The killed daemon left its lock behind; it names a dead process and must not block us.
      const lock = JSON.parse(readFileSync(join(dir, 'daemon.lock'), 'utf8')) as { pid: number };
      assert.equal(lock.pid, d!.pid, where('the stale lock names the killed daemon'));
      assert.throws(() => process.kill(lock.pid, 0), /ESRCH/, 'the lock holder is gone');
      const t1 = performance.now();
      d = await serve(dir, port);
      dbg(`restart ${Math.round(performance.now() - t1)} ms`);
      const t2 = performance.now();
      // Readers continue their walks from the cursors they held before the crash.
      for (const r of READERS) await continueWalk(r);
      dbg(`walks ${Math.round(performance.now() - t2)} ms`);
      // What the crash left of each unacknowledged send, as a reader of it sees.
      for (const lane of lanes) {
        const m = lane.pending;
        if (!m) continue;
        const reader = m.to === '#crash' ? READERS[Math.floor(rand() * READERS.length)]! : m.to;
        const found = walks.get(reader)!.seen.filter((x) => x.correlation === m.key);
        assert.ok(found.length <= 1, where(`${m.key} stored ${found.length} times`));
        m.foundBeforeRetry = found[0]?.message_id ?? null;
        if (found.length) committedUnacked++;
      }
    }
    assert.equal(kills, ROUNDS);
    dbg(`${all.size} messages, ${committedUnacked} committed without an acknowledgement`);
    assert.ok(
      lanes.every((l) => l.pending === null),
      where('every send was acknowledged in the end'),
    );

    // ---- the verdict
    const unacked = [...all.values()].filter((m) => m.ackedId === null);
    assert.deepEqual(
      unacked.map((m) => m.key),
      [],
      where('no logical message left unacknowledged'),
    );
    const total = all.size;
    assert.ok(total >= 40, where(`enough traffic to mean something (got ${total} messages)`));
    for (const r of READERS) {
      await continueWalk(r);
      // A fresh walk from the start, with other page sizes, sees the same thing.
      const c = clients.get(r)!;
      const fresh: MessageOut[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 2000; pages++) {
        const p = await c.inbox({ include_acked: true, limit: 1 + Math.floor(rand() * 50), ...(cursor ? { after: cursor } : {}) });
        if (p.messages.length === 0) break;
        fresh.push(...p.messages);
        cursor = p.next_cursor!;
      }
      const unread = (await c.unread()).unread;
      const continued = walks.get(r)!.seen;
      assert.deepEqual(
        continued.map((m) => m.message_id),
        fresh.map((m) => m.message_id),
        where(`${r}: the walk continued across ${kills} crashes equals a fresh walk`),
      );
      // Each message once, by id and by idempotency key (correlation).
      assert.equal(new Set(fresh.map((m) => m.message_id)).size, fresh.length, where(`${r}: no message twice`));
      const byKey = new Map<string, MessageOut>();
      for (const m of fresh) {
        assert.ok(m.correlation && all.has(m.correlation), where(`${r}: ${m.message_id} is one of ours`));
        assert.ok(!byKey.has(m.correlation), where(`${r}: key ${m.correlation} stored twice`));
        byKey.set(m.correlation, m);
      }
      const mine = [...all.values()].filter((m) => m.to === r || m.to === '#crash');
      for (const m of mine) {
        const got = byKey.get(m.key);
        assert.ok(got, where(`${r}: acknowledged ${m.key} (${m.attempts} attempts) is missing`));
        assert.equal(got.message_id, m.ackedId, where(`${r}: ${m.key} has the id its acknowledgement named`));
        assert.equal(got.subject, m.subject);
        assert.equal(got.body, m.body);
      }
      assert.equal(fresh.length, mine.length, where(`${r}: nothing but the messages sent to it`));
      assert.equal(unread, mine.length, where(`${r}: unread counts every message once`));
      // Send order within each lane (one send at a time) is the order every reader sees.
      const lastN = new Map<string, number>();
      for (const m of fresh) {
        const l = all.get(m.correlation!)!;
        assert.ok((lastN.get(l.lane) ?? -1) < l.n, where(`${r}: ${l.key} after ${l.lane}.n${lastN.get(l.lane)}: out of order`));
        lastN.set(l.lane, l.n);
      }
    }
    for (const { key, id } of retriedAfterAck) assert.equal(all.get(key)!.ackedId, id);
    for (const c of clients.values()) c.close();
  });
});
