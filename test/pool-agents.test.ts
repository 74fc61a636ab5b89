// Three agent processes take pooled tasks from one room through the built CLI, each call attested
// as its own session; one is SIGKILLed while it holds a task. The daemon's session sweep sees the
// process gone, ends its lease, and the task goes back to the pool, where another agent completes
// it: every task completes exactly once and the requester is told once per task.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MailClient } from '../src/client/http-client.js';
import type { TaskOut } from '../src/wire/tasks.js';
import { m4a, startShellAgent, type ShellAgent } from './support/shell-agents.js';
import { startTestDaemon, type StoreKind, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

// The default store (SQLite); M4A_TEST_STORE=memory runs the same round on the memory store.
const storeKind: StoreKind = process.env.M4A_TEST_STORE === 'memory' ? 'memory' : 'sqlite';
const TASKS = 6;
const DEADLINE_MS = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Worker {
  name: string;
  agent: ShellAgent;
  session: string;
  /** Tasks this agent claimed, in order, with the epoch it was given. */
  claims: { task_id: string; epoch: number; lease_id: string }[];
}

describe(`three agent processes share a pool; one is killed mid-task (${storeKind} store)`, () => {
  let d: TestDaemon;
  let home: string;
  let lead: MailClient;
  const workers: Worker[] = [];
  let orphan: number | null = null;

  before(async () => {
    // A short session sweep: a killed agent's claims end within a fraction of a second.
    d = await startTestDaemon({ storeKind, sweepMs: 100 });
    home = mkdtempSync(join(tmpdir(), 'm4a-pool-agents-'));
    lead = (await d.account('lead')).client;
    await d.operator.admin.roomAdd('workers');
    await d.operator.admin.memberAdd('workers', 'lead');
    for (const name of ['w1', 'w2', 'w3']) {
      const { secret } = await d.account(name);
      await d.operator.admin.memberAdd('workers', name);
      // Its own secret in its own environment; the CLI its bash runs is attested as this process.
      const agent = await startShellAgent({ HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir, M4A_URL: d.url, M4A_TOKEN: secret });
      const who = await agent.run(`${m4a} whoami --json`);
      assert.equal(who.code, 0, who.stderr);
      const me = JSON.parse(who.stdout) as { account: string; session: string | null; card: { attested?: { pid: number } } };
      assert.equal(me.account, name);
      assert.equal(me.card.attested?.pid, agent.pid, `${name}: the session is the agent process`);
      assert.ok(me.session, `${name} has a session`);
      workers.push({ name, agent, session: me.session, claims: [] });
    }
  });
  after(async () => {
    for (const w of workers) w.agent.stop();
    if (orphan !== null) killIfAlive(orphan);
    await d?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('every task completes exactly once; the killed agent’s task returns and another completes it', { timeout: DEADLINE_MS + 10_000 }, async (t) => {
    const started = Date.now();
    const deadline = started + DEADLINE_MS;
    const created: TaskOut[] = [];
    for (let i = 1; i <= TASKS; i++) created.push(await lead.task.create({ to: '#workers', title: `job ${i}`, instructions: `do job ${i}` }));
    const ids = new Set(created.map((x) => x.task_id));
    const requested = async () => (await lead.task.list({ role: 'requested', limit: 100 })).tasks.filter((x) => ids.has(x.task_id));
    const settled = async () => (await requested()).every((x) => x.state === 'completed' || x.state === 'failed');

    const victim = workers[1]!;
    let killedAt = 0;
    let killedTask = '';

    /** One agent's loop: claim from the pool, work (a sleep in its bash), complete with the epoch. */
    const loop = async (w: Worker) => {
      while (Date.now() < deadline) {
        const got = await w.agent.run(`${m4a} task claim --pool '#workers' --ttl 10m --json`);
        assert.equal(got.code, 0, `${w.name} claim: ${got.stderr}`);
        const { task, lease } = JSON.parse(got.stdout) as { task: TaskOut | null; lease: { lease_id: string; epoch: number } | null };
        if (!task || !lease) {
          if (await settled()) return;
          await sleep(100);
          continue;
        }
        w.claims.push({ task_id: task.task_id, epoch: lease.epoch, lease_id: lease.lease_id });
        if (w === victim) {
          // The lease is the agent's session's: only its process's end (not the 10 min TTL) frees it.
          assert.equal((await d.store.getLease(lease.lease_id))?.holderSession, w.session);
          // Mid-work: its bash runs the job (exec: the sleep keeps the shell's pid, written first).
          const pidFile = join(home, 'victim-work.pid');
          void w.agent.run(`echo $$ > '${pidFile}'; exec sleep 30`);
          orphan = await until('the victim at work', () => {
            if (!existsSync(pidFile)) return null;
            const pid = Number(readFileSync(pidFile, 'utf8').trim());
            return pid > 0 && cmdline(pid).startsWith('sleep') ? pid : null;
          });
          const exited = new Promise((r) => w.agent.child.once('exit', r));
          w.agent.stop();
          await exited;
          killedAt = Date.now();
          killedTask = task.task_id;
          // Its job outlived it (reparented): end it too, by its pid.
          killIfAlive(orphan);
          orphan = null;
          return;
        }
        const work = await w.agent.run('sleep 0.2');
        assert.equal(work.code, 0);
        const done = await w.agent.run(`${m4a} task update ${task.task_id} completed --epoch ${lease.epoch} --summary 'done by ${w.name}' --data '{"by":"${w.name}"}' --json`);
        assert.equal(done.code, 0, `${w.name} update: ${done.stderr}`);
        assert.equal((JSON.parse(done.stdout) as TaskOut).state, 'completed');
      }
      assert.fail(`${w.name}: the tasks were not all finished within ${DEADLINE_MS} ms`);
    };
    await Promise.all(workers.map(loop));
    const finished = Date.now();
    assert.ok(killedTask, 'the victim held a task when it was killed');

    // Every task completed exactly once, by a survivor, with a result naming it; none failed.
    const tasks = await Promise.all(created.map((c) => lead.task.get({ task_id: c.task_id })));
    for (const x of tasks) {
      assert.equal(x.state, 'completed', `${x.task_id}: ${x.state}`);
      const completions = x.history.filter((h) => h.state === 'completed');
      assert.equal(completions.length, 1, `${x.task_id}: one completed entry`);
      const by = completions[0]!.by.split('/')[0]!;
      assert.notEqual(by, victim.name, 'the killed agent completed nothing');
      assert.match(x.to, new RegExp(`^${by}/`));
      assert.deepEqual(x.result, { summary: `done by ${by}`, data: { by } });
    }
    assert.deepEqual((await lead.task.list({ role: 'requested', state: 'failed', limit: 100 })).tasks, [], 'no task failed');
    assert.equal(
      workers.reduce((n, w) => n + (w === victim ? 0 : w.claims.length), 0),
      TASKS,
      'the survivors claimed each task once, the returned one included',
    );

    // The killed agent's task: claimed by it, back in the pool because its process ended, then
    // claimed again (attempt 2) and completed by another agent.
    const k = tasks.find((x) => x.task_id === killedTask)!;
    assert.deepEqual(
      k.history.map((h) => [h.state, h.by.split('/')[0], h.note]),
      [
        ['submitted', 'lead', undefined],
        ['working', victim.name, 'claimed (attempt 1 of 3)'],
        ['submitted', 'mailbox', 'back in the pool: its holder’s process ended (attempt 1 of 3)'],
        ['working', k.to.split('/')[0], 'claimed (attempt 2 of 3)'],
        ['completed', k.to.split('/')[0], undefined],
      ],
    );
    assert.equal(k.pool?.attempt, 2);
    const returnedAt = Date.parse(k.history[2]!.at);

    // The killed agent's lease ended with its session, and is not live.
    const vl = victim.claims[0]!;
    const lease = await d.store.getLease(vl.lease_id);
    assert.equal(lease?.endReason, 'session_ended');
    assert.ok(lease.endedAt !== null && lease.settled, 'ended and acted on');
    const session = (await d.store.listSessions()).find((s) => s.account === victim.name && s.id === victim.session);
    assert.ok(session?.endedAt, 'the session ended');
    const live = await lead.lease.list({ resource_prefix: killedTask });
    assert.ok(!live.leases.some((l) => l.lease_id === vl.lease_id), 'not among the live leases');
    // The second claim fenced the first: its epoch moved on.
    const again = workers.filter((w) => w !== victim).flatMap((w) => w.claims.filter((c) => c.task_id === killedTask));
    assert.deepEqual(
      again.map((c) => c.epoch),
      [vl.epoch + 1],
    );

    // The requester's inbox: one completion per task, in that task's thread.
    const mail = await inbox(lead);
    for (const c of created) {
      const completed = mail.filter((m) => m.subject === `Task completed: ${c.title}`);
      assert.equal(completed.length, 1, `${c.title}: one completion mail`);
      assert.equal(completed[0]!.thread_id, c.thread_id);
    }
    assert.equal(mail.filter((m) => m.subject.startsWith('Task completed: ')).length, TASKS);

    t.diagnostic(`run ${finished - started} ms; kill → back in the pool ${returnedAt - killedAt} ms (sweep every 100 ms)`);
    t.diagnostic(`claims: ${workers.map((w) => `${w.name} ${w.claims.length}`).join(', ')}`);
  });
});

/** Every message in the account's inbox, acknowledged or not, page by page. */
async function inbox(c: MailClient): Promise<{ subject: string; thread_id?: string }[]> {
  const out: { subject: string; thread_id?: string }[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await c.inbox({ limit: 256, include_bodies: false, include_acked: true, ...(after ? { after } : {}) });
    out.push(...page.messages);
    if (page.messages.length === 0 || !page.next_cursor) return out;
    after = page.next_cursor;
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

/** Ends the victim's job by its pid, unless that pid is no longer its sleep. */
function killIfAlive(pid: number): void {
  if (!cmdline(pid).startsWith('sleep 30')) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}
