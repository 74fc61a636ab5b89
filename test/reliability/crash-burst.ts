// A burst of concurrent idempotent sends against one daemon that stays up while its store goes away
// under it (`disrupt`: the PostgreSQL server restarted, or the daemon's backends terminated). A
// send that fails must fail by name (store_unavailable, 503) and soon: never a 500 internal, never
// the daemon gone, never an answer later than the client's deadline. It is retried with the same
// key until the store is back; readers keep walking their cursors throughout. At the end
// crash-verdict.ts checks every acknowledged message once, in order, and a parked wait is woken.
import assert from 'node:assert/strict';
import { DaemonUnreachable, MailClient } from '../../src/client/http-client.js';
import { MailError } from '../../src/wire/errors.js';
import { tally } from '../support/soak-tally.js';
import { READERS, SENDERS, TARGETS, type Daemon } from './crash-daemon.js';
import { continueWalk, verdict, type Logical, type Walk } from './crash-verdict.js';
import { rng, sleep } from './helpers.js';

export interface BurstRun {
  url: string;
  daemon: Daemon;
  secrets: Map<string, string>;
  seed: number;
  /** The soak tally it counts into. */
  door: string;
  /** Rerun hint for failure messages ("M4A_CRASH_SEED=…"). */
  rerun: string;
  /** Makes the store go away and come back; resolves once it is back (or throws). */
  disrupt: () => Promise<void>;
  /** The whole burst must end within this (default 120 s). */
  deadlineMs?: number;
  /** Acknowledged sends a lane still makes after the disruption ended (default 15). */
  afterwards?: number;
  debug?: (s: string) => void;
}

export interface BurstFigures {
  messages: number;
  /** Sends refused store_unavailable (each retried with its key). */
  refused: number;
  /** Retries after a refusal that found the message had committed (duplicate: true). */
  committedUnacked: number;
  /** The longest a refused send took to be answered, ms. */
  slowestRefusalMs: number;
  /** From the start of the disruption to the first acknowledged send after it ended, ms. */
  outageMs: number;
  /** How long the disruption itself took (the restart command), ms. */
  disruptMs: number;
  /** A parked inbox wait woken by a send after the disruption, ms. */
  wakeMs: number;
}

const CLIENT_TIMEOUT_MS = 25_000; // above the store's 15 s statement timeout and 5 s connect timeout

export async function burst(o: BurstRun): Promise<BurstFigures> {
  const rand = rng(o.seed);
  const where = (s: string) => `${s} (seed ${o.seed}; rerun with ${o.rerun})`;
  const dbg = o.debug ?? (() => undefined);
  const t = tally(o.door);
  const deadline = Date.now() + (o.deadlineMs ?? 120_000);
  const afterwards = o.afterwards ?? 15;
  const clients = new Map([...SENDERS, ...READERS].map((a) => [a, new MailClient({ url: o.url, token: o.secrets.get(a)!, timeoutMs: CLIENT_TIMEOUT_MS })]));
  const all = new Map<string, Logical>();
  const walks = new Map<string, Walk>(READERS.map((r) => [r, { cursor: undefined, seen: [] }]));
  const f: BurstFigures = { messages: 0, refused: 0, committedUnacked: 0, slowestRefusalMs: 0, outageMs: 0, disruptMs: 0, wakeMs: 0 };
  const triggerAfter = 60 + Math.floor(rand() * 120);
  let acks = 0;
  let disruptStarted = 0;
  let disruptEnded = 0;
  let disruption: Promise<void> = Promise.resolve();
  let disruptError = null as Error | null;

  /** A failure that is not a named, timely refusal fails the test, with the daemon's state. */
  const unexpected = (what: string, err: unknown): never => {
    if (err instanceof DaemonUnreachable) t.crashes++;
    else if (err instanceof MailError && /did not answer in time/.test(err.message)) t.hangs++;
    else if (err instanceof MailError && err.code === 'internal') t.status5xx++;
    const gone = o.daemon.child.exitCode !== null || o.daemon.child.signalCode !== null;
    const code = err instanceof MailError ? err.code : (err as Error).name;
    return assert.fail(where(`${what}: ${code}: ${(err as Error).message}${gone ? ` (the daemon exited: ${o.daemon.stderr().slice(-2000)})` : ''}`));
  };

  /** Runs a call until it is answered, retrying store_unavailable (same arguments) until the deadline. */
  const untilAnswered = async <R>(what: string, call: () => Promise<R>): Promise<R> => {
    for (;;) {
      const t0 = performance.now();
      try {
        return await call();
      } catch (err) {
        if (!(err instanceof MailError && err.code === 'store_unavailable')) return unexpected(what, err);
        f.refused++;
        const ms = performance.now() - t0;
        f.slowestRefusalMs = Math.max(f.slowestRefusalMs, ms);
        dbg(`${what}: ${err.message} after ${Math.round(ms)} ms`);
        assert.ok(Date.now() < deadline, where(`${what}: the store still unavailable at the deadline`));
        await sleep(50 + Math.floor(rand() * 150));
      }
    }
  };

  const send = async (c: MailClient, m: Logical): Promise<void> => {
    const r = await untilAnswered(`send of ${m.key}`, () => {
      m.attempts++;
      t.requests++;
      return c.send({ to: m.to, subject: m.subject, body: m.body, correlation: m.key, idempotency_key: m.key });
    });
    if (m.ackedId !== null) {
      assert.equal(r.message_id, m.ackedId, where(`a retry of acknowledged ${m.key} returns the original id`));
      assert.equal(r.duplicate, true, where(`a retry of acknowledged ${m.key} is a duplicate`));
      return;
    }
    if (m.attempts === 1) assert.equal(r.duplicate, false, where(`a first send of ${m.key} is new`));
    else if (r.duplicate) f.committedUnacked++; // a refused attempt had committed after all
    m.ackedId = r.message_id;
    if (disruptEnded && !f.outageMs) f.outageMs = Date.now() - disruptStarted;
    if (++acks === triggerAfter) {
      disruptStarted = Date.now();
      dbg(`disrupting after ${acks} acknowledgements`);
      disruption = o.disrupt().then(
        () => void (disruptEnded = Date.now()),
        (err: unknown) => {
          disruptError = err instanceof Error ? err : new Error(String(err));
          disruptEnded = Date.now();
        },
      );
    }
  };

  const lane = async (name: string, sender: string) => {
    const c = clients.get(sender)!;
    const history: Logical[] = [];
    let after = 0;
    for (let n = 0; Date.now() < deadline; n++) {
      if (disruptEnded && ++after > afterwards) return;
      if (n > 5000) assert.fail(where(`${name}: the disruption never came (trigger after ${triggerAfter})`));
      const m: Logical = {
        key: `${name}.n${n}`,
        lane: name,
        n,
        sender,
        to: TARGETS[Math.floor(rand() * TARGETS.length)]!,
        subject: `burst ${name} #${n}`,
        body: `payload ${n} ${'y'.repeat(Math.floor(rand() * 200))}`,
        ackedId: null,
        attempts: 0,
      };
      all.set(m.key, m);
      await send(c, m);
      history.push(m);
      // Now and then, a retry of an acknowledged send: nothing new, the same id.
      if (rand() < 0.1) await send(c, history[Math.floor(rand() * history.length)]!);
    }
    assert.fail(where(`${name}: the burst did not end by the deadline`));
  };

  /** Readers walk on during the burst, through the outage. */
  const reader = async (r: string) => {
    const c = clients.get(r)!;
    while (!disruptEnded || acks < triggerAfter + 20) {
      await untilAnswered(`${r}'s walk`, () => continueWalk(c, walks.get(r)!, rand));
      await sleep(20);
      assert.ok(Date.now() < deadline, where(`${r}: the burst did not end by the deadline`));
    }
  };

  try {
    const lanes = SENDERS.flatMap((s) => [0, 1].map((i) => lane(`${s}.l${i}`, s)));
    await Promise.all([...lanes, ...READERS.map(reader)]);
    await disruption;
    if (disruptError) throw disruptError;
    f.disruptMs = disruptEnded - disruptStarted;
    assert.equal(o.daemon.child.exitCode, null, where(`the daemon survived (stderr: ${o.daemon.stderr().slice(-2000)})`));
    // The wake-up path is back: a parked wait gets a send made after the disruption.
    const ra = clients.get('ra')!;
    await untilAnswered(`ra's walk`, () => continueWalk(ra, walks.get('ra')!, rand));
    const w = walks.get('ra')!;
    const m: Logical = { key: 'wake.n0', lane: 'wake', n: 0, sender: 's1', to: 'ra', subject: 'wake', body: 'after', ackedId: null, attempts: 0 };
    all.set(m.key, m);
    const parked = ra.inbox({ include_acked: true, wait_secs: 20, ...(w.cursor ? { after: w.cursor } : {}) });
    await sleep(200);
    const t0 = performance.now();
    await send(clients.get('s1')!, m);
    const woke = await parked;
    f.wakeMs = Math.round(performance.now() - t0);
    assert.deepEqual(
      woke.messages.map((x) => x.correlation),
      ['wake.n0'],
      where('a parked wait is woken by the next send'),
    );
    w.seen.push(...woke.messages);
    w.cursor = woke.next_cursor ?? w.cursor;
    f.messages = all.size;
    await verdict({ readers: READERS, clients, walks, all, rand, where, across: 'the disruption' });
    t.rounds++;
    dbg(JSON.stringify(f));
    return f;
  } finally {
    await disruption; // a failed burst still lets a restart finish before the suite checks the server
    for (const c of clients.values()) c.close();
  }
}
