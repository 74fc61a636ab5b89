// The kill -9 rounds of the crash test, the same on every store: concurrent senders send with
// idempotency keys; after a seeded number of acknowledgements (sometimes a moment later) the
// daemon gets SIGKILL; it is restarted on the same data directory, port and store (the dead
// daemon's lock must not block it), readers continue their cursor walks, and every send whose
// acknowledgement never arrived is retried with the same key: a retry of a send that committed
// returns its id as a duplicate, one that did not stores it now. crash-verdict.ts checks the end.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DaemonUnreachable, MailClient } from '../../src/client/http-client.js';
import { MailError } from '../../src/wire/errors.js';
import { tally } from '../support/soak-tally.js';
import { READERS, SENDERS, TARGETS, serve, type Daemon } from './crash-daemon.js';
import { continueWalk, verdict, type Logical, type Walk } from './crash-verdict.js';
import { rng } from './helpers.js';

const LANES_PER_SENDER = 2;

export interface CrashRun {
  dir: string;
  port: number;
  /** A --store spec (postgres://…), or none for SQLite in the data directory. */
  store?: string;
  rounds: number;
  seed: number;
  /** The soak tally it counts into ("crash-sqlite", "crash-postgres"). */
  door: string;
  secrets: Map<string, string>;
  /** The running daemon, replaced at each restart (the caller stops the last one). */
  daemon: { d: Daemon };
  debug?: (s: string) => void;
}

export async function crashRounds(o: CrashRun): Promise<{ messages: number; committedUnacked: number }> {
  const rand = rng(o.seed);
  const where = (s: string) => `${s} (seed ${o.seed}; rerun with M4A_CRASH_SEED=${o.seed})`;
  const dbg = o.debug ?? (() => undefined);
  const t = tally(o.door);
  const url = `http://127.0.0.1:${o.port}`;
  const lanes = SENDERS.flatMap((s) =>
    Array.from({ length: LANES_PER_SENDER }, (_, i) => ({ name: `${s}.l${i}`, sender: s, next: 0, pending: null as Logical | null, history: [] as Logical[] })),
  );
  const all = new Map<string, Logical>();
  const retriedAfterAck: { key: string; id: string }[] = [];
  const walks = new Map<string, Walk>(READERS.map((r) => [r, { cursor: undefined, seen: [] }]));
  let kills = 0;
  let committedUnacked = 0;

  // One client per account for the whole run: its keep-alive pool drops the connections of a
  // killed daemon and connects afresh to the restarted one.
  const clients = new Map([...SENDERS, ...READERS].map((a) => [a, new MailClient({ url, token: o.secrets.get(a)!, timeoutMs: 10_000 })]));

  /** Sends a logical message once; true when acknowledged, false when the daemon went away. */
  const attempt = async (c: MailClient, m: Logical): Promise<boolean> => {
    m.attempts++;
    t.requests++;
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
      if (err instanceof MailError) {
        if (err.code === 'internal') t.status5xx++;
        assert.fail(where(`send of ${m.key} refused by name: ${err.code} ${err.message}`));
      }
      throw err;
    }
  };

  try {
    for (let round = 0; round <= o.rounds; round++) {
      const last = round === o.rounds;
      // Kill after a random number of acknowledgements in this round, sometimes a moment later.
      const killAfter = 10 + Math.floor(rand() * 90);
      const killDelayMs = rand() < 0.5 ? 0 : Math.floor(rand() * 15);
      const d = o.daemon.d;
      let acks = 0;
      let killed = false;
      const kill = () => {
        if (killed || last) return;
        killed = true;
        const doKill = () => d.child.kill('SIGKILL');
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
        for (let i = 0; i < cap && !(killed && d.child.exitCode !== null); i++) {
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
      await d.exited;
      kills++;
      // The killed daemon left its lock behind; it names a dead process and must not block us.
      const lock = JSON.parse(readFileSync(join(o.dir, 'daemon.lock'), 'utf8')) as { pid: number };
      assert.equal(lock.pid, d.pid, where('the stale lock names the killed daemon'));
      assert.throws(() => process.kill(lock.pid, 0), /ESRCH/, 'the lock holder is gone');
      const t1 = performance.now();
      o.daemon.d = await serve(o.dir, o.port, o.store);
      dbg(`restart ${Math.round(performance.now() - t1)} ms`);
      // Readers continue their walks from the cursors they held before the crash.
      for (const r of READERS) await continueWalk(clients.get(r)!, walks.get(r)!, rand);
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
      t.rounds++;
    }
    assert.equal(kills, o.rounds);
    dbg(`${all.size} messages, ${committedUnacked} committed without an acknowledgement`);
    assert.ok(
      lanes.every((l) => l.pending === null),
      where('every send was acknowledged in the end'),
    );
    assert.ok(all.size >= 40, where(`enough traffic to mean something (got ${all.size} messages)`));
    await verdict({ readers: READERS, clients, walks, all, rand, where, across: `${kills} crashes` });
    for (const { key, id } of retriedAfterAck) assert.equal(all.get(key)!.ackedId, id);
    return { messages: all.size, committedUnacked };
  } finally {
    for (const c of clients.values()) c.close();
  }
}
