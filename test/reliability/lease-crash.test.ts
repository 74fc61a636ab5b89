// Crash test of leases: the real daemon (`m4a serve`, SQLite, its own process, loopback) is killed
// with SIGKILL at seeded random moments while concurrent lanes of three accounts claim overlapping
// exclusive (and some shared) path leases and pooled tasks, renew, release and complete them, and
// a requester keeps the pool filled. After every kill the SQLite file is opened directly
// (lease-crash-checks.ts): at most one exclusive holder of anything, every acknowledged claim
// still there (live, or ended by expiry or by a release its client sent), every pooled task in one
// consistent state (held ⇔ working under its own lease, each claim come back once), epochs only
// growing. The daemon is restarted on the same file each time. At the end the task claims are left
// to expire, the daemon is killed once more around that moment, and after the restart every task
// must be back in the pool exactly once per ended claim (one history entry, one room mail) or
// failed lease_exhausted or completed. One window between two writes that a kill can hit is
// known (a task row and its message): what it leaves is noted and shown by the todo test at the
// end. Two others leave a stray live lease that the daemon ends itself (pool.ts: the next claim
// after 30 s, and the session sweep's reconcile): a claim's lease taken with the task not yet
// moved, and a completion whose lease was not yet ended. Tolerated, counted.
// M4A_LEASE_CRASH_ROUNDS (default 5), M4A_CRASH_SEED to replay, M4A_CRASH_DEBUG=1 to narrate.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DaemonUnreachable, MailClient } from '../../src/client/http-client.js';
import { MailError } from '../../src/wire/errors.js';
import type { TaskOut } from '../../src/wire/tasks.js';
import { BUILT_CLI, serveProcess, type ServedDaemon } from '../support/serve-process.js';
import { freePort, rng } from './helpers.js';
import { GLOBS } from './lease-model-world.js';
import { checkFile, type Acked } from './lease-crash-checks.js';

const ROUNDS = Number(process.env.M4A_LEASE_CRASH_ROUNDS ?? 5);
const SEED = Number(process.env.M4A_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
const ROOT = '/crash/repo';
const ROOM = 'crashpool';
const WORKERS = ['w1', 'w2', 'w3'];
const LANES = 2;
/** Task claims live 10 s (the least a claim may): the end of the test waits them out. */
const TASK_TTL = 10;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const dbg = (s: string) => {
  if (process.env.M4A_CRASH_DEBUG) process.stderr.write(`lease-crash: ${s}\n`);
};

async function serve(dir: string, port: number): Promise<ServedDaemon> {
  let timer: NodeJS.Timeout | undefined;
  const started = serveProcess(['--data-dir', dir, '--port', String(port)], { ...process.env, M4A_LOG_LEVEL: 'warn' });
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('serve did not start within 20 s')), 20_000)));
  try {
    return await Promise.race([started, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe(`lease crash: SIGKILL during concurrent claims (seed ${SEED})`, () => {
  const rand = rng(SEED);
  const where = (s: string) => `${s} (seed ${SEED}; rerun with M4A_CRASH_SEED=${SEED})`;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  let dir: string;
  let db: string;
  let url: string;
  let port: number;
  let d: ServedDaemon | null = null;
  const clients = new Map<string, MailClient>();
  /** What the known crash windows left (see the todo test at the end). */
  const gaps = new Set<string>();
  const strays = new Set<string>();

  before(async () => {
    assert.ok(existsSync(BUILT_CLI), 'run `npm run build` first (npm test does)');
    // tmpfs: what must survive a SIGKILL is what was written before the answer (crash.test.ts).
    dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'm4a-lease-crash-'));
    db = join(dir, 'mail.db');
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    d = await serve(dir, port);
    const op = new MailClient({ url, token: readFileSync(join(dir, 'operator.token'), 'utf8').trim() });
    await op.admin.roomAdd(ROOM);
    for (const id of [...WORKERS, 'lead']) {
      clients.set(id, new MailClient({ url, token: (await op.admin.accountAdd({ id })).secret, timeoutMs: 10_000 }));
      await op.admin.memberAdd(ROOM, id);
    }
    op.close();
  });
  after(async () => {
    for (const c of clients.values()) c.close();
    if (d && d.child.exitCode === null) {
      d.child.kill('SIGTERM');
      await d.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${ROUNDS} kills: one exclusive holder at most, no acknowledged claim lost, every pooled task consistent and returned once`, async () => {
    const acked: Acked[] = [];
    const stats = { claims: 0, conflicts: 0, releases: 0, renews: 0, completed: 0, poolEmpty: 0, created: 0, lostAfterExpiry: 0 };
    let acks = 0;
    let killed = false;
    let kill = () => undefined as void;
    const tasks = new Set<string>();

    /** Runs one request; null when the daemon went away (the request is in doubt). */
    const attempt = async <T>(fn: () => Promise<T>): Promise<{ ok: T } | { err: MailError } | null> => {
      try {
        return { ok: await fn() };
      } catch (e) {
        if (e instanceof DaemonUnreachable) return null;
        if (e instanceof MailError) return { err: e };
        throw e;
      }
    };
    const refusedAs = (r: { err: MailError }, allowed: string[], what: string) =>
      assert.ok(allowed.includes(r.err.code), where(`${what}: refused ${r.err.code} (${r.err.message})`));
    /** Arms the round's deadline kill (set per round below). */
    let firstAck = () => undefined as void;
    const acknowledged = () => {
      if (++acks === 1) firstAck();
      if (acks >= killAfter) kill();
    };
    /** Whether the lease may have ended without the client's word: its expiry passed. */
    const mayHaveEnded = (a: Acked) => a.endTried || a.expiresAt <= Date.now();

    const claimPath = async (account: string, c: MailClient) => {
      const glob = pick(GLOBS);
      const mode = rand() < 0.8 ? 'exclusive' : 'shared';
      const ttl = rand() < 0.5 ? 10 : 600;
      const sentAt = Date.now();
      const r = await attempt(() => c.lease.claim({ resource: `path:${glob}`, root: ROOT, mode, ttl_secs: ttl }));
      if (!r) return false;
      if ('err' in r) {
        refusedAs(r, ['lease_conflict', 'too_many_leases'], `claim of ${glob}`);
        stats.conflicts++;
        return true;
      }
      const l = r.ok;
      acked.push({
        kind: 'path',
        leaseId: l.lease_id,
        epoch: l.epoch,
        space: `path:${ROOT}`,
        resource: glob,
        account,
        expiresAt: Date.parse(l.expires_at),
        sentAt,
        ackedAt: Date.now(),
        endTried: false,
        endAcked: false,
        busy: false,
      });
      stats.claims++;
      acknowledged();
      return true;
    };
    const claimTask = async (account: string, c: MailClient) => {
      const sentAt = Date.now();
      const r = await attempt(() => c.task.claim({ pool: `#${ROOM}`, ttl_secs: TASK_TTL }));
      if (!r) return false;
      if ('err' in r) {
        refusedAs(r, ['too_many_leases'], 'pool claim');
        return true;
      }
      if (!r.ok.task) {
        stats.poolEmpty++;
        return true;
      }
      const l = r.ok.lease!;
      const t = r.ok.task;
      assert.equal(t.pool?.lease_id, l.lease_id, where('the claimed task names its lease'));
      acked.push({
        kind: 'task',
        leaseId: l.lease_id,
        epoch: l.epoch,
        space: `task:${t.task_id}`,
        resource: t.task_id,
        account,
        expiresAt: Date.parse(l.expires_at),
        sentAt,
        ackedAt: Date.now(),
        endTried: false,
        endAcked: false,
        busy: false,
      });
      stats.claims++;
      acknowledged();
      return true;
    };
    /** Renews, releases or (a task) completes one of the account's live claims. */
    const act = async (account: string, c: MailClient, op: 'renew' | 'release' | 'complete') => {
      const mine = acked.filter((a) => a.account === account && !a.busy && !a.endTried && a.expiresAt > Date.now() + 500 && (op !== 'complete' || a.kind === 'task'));
      if (mine.length === 0) return true;
      const a = pick(mine);
      a.busy = true;
      try {
        if (op !== 'renew') a.endTried = true;
        const r = await attempt(async (): Promise<unknown> => {
          if (op === 'renew') return c.lease.renew({ lease_id: a.leaseId, epoch: a.epoch, ttl_secs: a.kind === 'task' ? TASK_TTL : 600 });
          if (op === 'release') return c.lease.release({ lease_id: a.leaseId, epoch: a.epoch });
          return c.task.update({ task_id: a.resource, state: 'completed', epoch: a.epoch, result: { summary: 'done' } });
        });
        if (!r) return false;
        if ('err' in r) {
          // Only a claim whose expiry passed may be gone without its holder's word.
          assert.ok(mayHaveEnded(a), where(`${op} of live ${a.leaseId} (${a.resource}) refused ${r.err.code}: ${r.err.message}`));
          refusedAs(r, ['lease_lost', 'not_task_party', 'task_terminal'], `${op} of ${a.leaseId}`);
          stats.lostAfterExpiry++;
          return true;
        }
        if (op === 'renew') {
          a.expiresAt = Date.parse((r.ok as { expires_at: string }).expires_at);
          stats.renews++;
        } else {
          a.endAcked = true;
          if (op === 'release') stats.releases++;
          else {
            assert.equal((r.ok as TaskOut).state, 'completed');
            stats.completed++;
          }
        }
        acknowledged();
        return true;
      } finally {
        a.busy = false;
      }
    };
    const worker = async (account: string, stop: () => boolean) => {
      const c = clients.get(account)!;
      while (!stop()) {
        const r = rand();
        const alive =
          r < 0.35 ? await claimPath(account, c) : r < 0.6 ? await claimTask(account, c) : await act(account, c, r < 0.75 ? 'release' : r < 0.85 ? 'renew' : 'complete');
        if (!alive) return;
      }
    };
    /** The requester keeps a few tasks on offer (at most 60 in all). */
    const requester = async (stop: () => boolean) => {
      const c = clients.get('lead')!;
      while (!stop() && tasks.size < 60) {
        const r = await attempt(() => c.task.create({ to: `#${ROOM}`, title: `job ${tasks.size + 1}`, max_attempts: 2 + Math.floor(rand() * 2) }));
        if (!r) return;
        if ('err' in r) assert.fail(where(`task create refused ${r.err.code}`));
        tasks.add(r.ok.task_id);
        stats.created++;
        await sleep(20 + Math.floor(rand() * 40));
      }
    };

    let killAfter = 0;
    const killNow = () => d!.child.kill('SIGKILL');
    for (let round = 0; round <= ROUNDS; round++) {
      const last = round === ROUNDS;
      killAfter = 5 + Math.floor(rand() * 40);
      const delay = rand() < 0.5 ? 0 : Math.floor(rand() * 15);
      acks = 0;
      killed = false;
      kill = () => {
        if (killed || last) return;
        killed = true;
        if (delay === 0) killNow();
        else setTimeout(killNow, delay);
      };
      let budget = 60;
      const stop = () => (last ? budget-- <= 0 : killed && d!.child.exitCode !== null);
      // Also killed after a while without enough acknowledgements (everything held: conflicts only),
      // counted from the round's first acknowledgement: on a loaded machine the restarted daemon's
      // first answers can take longer than the whole window, and a round killed before any claim
      // tests nothing (the final "enough claims" check failed that way under load). A round with
      // no acknowledgement at all is killed after 5 s.
      const window = 100 + Math.floor(rand() * 400);
      let deadline = setTimeout(kill, 5000);
      firstAck = () => {
        clearTimeout(deadline);
        deadline = setTimeout(kill, window);
      };
      const t0 = performance.now();
      await Promise.all([requester(stop), ...WORKERS.flatMap((w) => Array.from({ length: LANES }, () => worker(w, stop)))]);
      clearTimeout(deadline);
      dbg(`round ${round}: ${Math.round(performance.now() - t0)} ms, ${acks} acks (kill after ${killAfter})`);
      if (last) break;
      assert.ok(killed, where(`round ${round}: killed mid-traffic`));
      await d!.exited;
      const seen = await checkFile(db, acked, { room: ROOM, strict: false, gaps, strays }, where(`after kill ${round + 1}`));
      dbg(`after kill ${round + 1}: ${seen.live} live leases, ${seen.tasks} tasks`);
      d = await serve(dir, port);
    }

    // The end: the task claims expire (10 s at most); the daemon is killed once more around that
    // moment, so some returns happen before the kill, some are recovered after the restart.
    const lead = clients.get('lead')!;
    const held = (await lead.lease.list({ resource_prefix: 't-', limit: 500 })).leases;
    const lastExpiry = Math.max(Date.now(), ...held.map((l) => Date.parse(l.expires_at)));
    await sleep(Math.max(0, lastExpiry - Date.now() - 300 + Math.floor(rand() * 1500)));
    killNow();
    await d!.exited;
    await checkFile(db, acked, { room: ROOM, strict: false, gaps, strays }, where('after the kill during expiry'));
    d = await serve(dir, port);
    await sleep(Math.max(0, lastExpiry - Date.now()) + 2500);
    // Every return is told to the room once: one `submitted` change (after the first) per return.
    for (const id of tasks) {
      const t = await lead.task.get({ task_id: id });
      const thread = (await lead.get(t.thread_id, true)).thread ?? [];
      const changes = thread.filter((m) => m.task?.task_id === id);
      const versions = new Set(changes.map((m) => m.task!.version));
      assert.equal(versions.size, changes.length, where(`task ${id}: no change is mail twice`));
      // A kill between a change's row and its message loses the message (tasks.ts transition: the
      // row first). Noted, not failed.
      t.history.forEach((h, i) => {
        if (!versions.has(i + 1)) gaps.add(`task ${id}: version ${i + 1} (${h.state}${h.note ? `: ${h.note}` : ''}) is in the history but no message in the thread`);
      });
      const returns = changes.filter((m) => m.task!.state === 'submitted' && m.task!.version > 1);
      const backs = t.history.flatMap((h, i) => (h.note?.startsWith('back in the pool') ? [i + 1] : []));
      assert.ok(returns.length <= backs.length, where(`task ${id}: no return told twice`));
      for (const m of returns) assert.ok(backs.includes(m.task!.version), where(`task ${id}: the room mail of version ${m.task!.version} is a return`));
      assert.ok(!['working', 'input_required'].includes(t.state), where(`task ${id} is still ${t.state} after its claims expired`));
    }
    d.child.kill('SIGTERM');
    await d.exited;
    const final = await checkFile(db, acked, { room: ROOM, strict: true, gaps, strays }, where('after the graceful stop'));
    dbg(`${JSON.stringify(stats)}; ${final.tasks} tasks; ${strays.size} stray claim leases left by kills`);
    assert.ok(stats.claims >= 20, where(`enough claims to mean something (${stats.claims})`));
    assert.ok(acked.some((a) => a.kind === 'task') && acked.some((a) => a.kind === 'path'), where('both kinds of claims acknowledged'));
    if (gaps.size) process.stderr.write(`# lease-crash: known crash windows hit:\n${[...gaps].map((g) => `#   ${g}`).join('\n')}\n`);
  });

  it(
    'no trace of the known crash windows: every change of a pooled task is mail, no live claim outlives its completed task',
    {
      todo: 'a kill between two writes: a task row and its message (the message is lost)',
    },
    () => {
      assert.deepEqual([...gaps], [], where('what the kills left'));
    },
  );
});
