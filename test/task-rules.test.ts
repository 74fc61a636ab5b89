// Every transition from every state to every state by every party, and every field at and over its
// limit: each refused by name and changing nothing (the version stays), each allowed one applied.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MailClient } from '../src/client/http-client.js';
import { ASSIGNEE_STATES, TASK_LIMITS, TASK_STATES, isTerminal, type TaskState } from '../src/wire/tasks.js';
import { isWellFormed } from '../src/wire/text.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';

const call = <T = any>(c: MailClient, path: string, body: unknown): Promise<T> => c.call<T>(path, body);
const code = async (p: Promise<unknown>): Promise<string> => {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return (e as { code: string }).code;
  }
};

describe('task rules', () => {
  let d: TestDaemon;
  let req: MailClient;
  let asg: MailClient;
  let other: MailClient;
  before(async () => {
    d = await startTestDaemon();
    req = (await d.account('req')).client;
    asg = (await d.account('asg')).client;
    other = (await d.account('other')).client;
  });
  after(() => d.stop());

  /** A fresh task in `state`, reached the legal way. */
  async function taskIn(state: TaskState): Promise<string> {
    const t = await call(req, '/task/create', { to: 'asg', title: `in ${state}` });
    const up = (s: TaskState) => call(asg, '/task/update', { task_id: t.task_id, state: s, note: 'n' });
    if (state === 'submitted') return t.task_id;
    if (state === 'canceled') await call(req, '/task/cancel', { task_id: t.task_id });
    else if (state === 'auth_required') await call(asg, '/approval/request', { reviewer: 'other', action: 'x', task_id: t.task_id });
    else await up(state);
    assert.equal((await call(req, '/task/get', { task_id: t.task_id })).state, state);
    return t.task_id;
  }

  const expected = (party: 'assignee' | 'requester' | 'stranger', verb: 'update' | 'cancel', from: TaskState, to: TaskState): string => {
    if (party === 'stranger') return 'not_task_party';
    if (isTerminal(from)) return 'task_terminal';
    if (verb === 'cancel') return party === 'requester' ? 'ok' : 'invalid_transition';
    if (party === 'requester') return 'invalid_transition';
    const allowed = ASSIGNEE_STATES.includes(to) && to !== from && (from !== 'auth_required' || to === 'failed');
    return allowed ? 'ok' : 'invalid_transition';
  };

  it('decides every (party, from, to) as the rules say, and a refusal changes nothing', async () => {
    const wrong: string[] = [];
    for (const from of TASK_STATES) {
      for (const [party, client] of [
        ['assignee', asg],
        ['requester', req],
        ['stranger', other],
      ] as const) {
        for (const to of TASK_STATES) {
          const id = await taskIn(from);
          const before = (await call(req, '/task/get', { task_id: id })).version as number;
          const got = await code(call(client, '/task/update', { task_id: id, state: to, note: 'why' }));
          const want = expected(party, 'update', from, to);
          if (got !== want) wrong.push(`${party} update ${from}→${to}: ${got}, want ${want}`);
          const after = (await call(req, '/task/get', { task_id: id })).version as number;
          if (after !== (got === 'ok' ? before + 1 : before)) wrong.push(`${party} update ${from}→${to}: version ${before}→${after}`);
        }
        const id = await taskIn(from);
        const got = await code(call(client, '/task/cancel', { task_id: id }));
        const want = expected(party, 'cancel', from, 'canceled');
        if (got !== want) wrong.push(`${party} cancel from ${from}: ${got}, want ${want}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('a new account of a removed requester’s name is no party to its tasks', async () => {
    const gone = (await d.account('gone')).client;
    const t = await call(gone, '/task/create', { to: 'asg', title: 'orphan' });
    await d.operator.admin.accountRemove('gone');
    const again = (await d.account('gone')).client;
    assert.equal(await code(call(again, '/task/get', { task_id: t.task_id })), 'not_task_party');
    assert.equal(await code(call(again, '/task/cancel', { task_id: t.task_id })), 'not_task_party');
    assert.equal((await call(asg, '/task/get', { task_id: t.task_id })).state, 'submitted', 'the assignee still has it');
  });

  it('keeps a task message’s subject within 512 bytes of whole characters, however long the title', async () => {
    const title = '😀'.repeat(128); // 512 bytes: at the limit
    const t = await call(req, '/task/create', { to: 'asg', title });
    await call(asg, '/task/update', { task_id: t.task_id, state: 'working' });
    const subjects = [...(await asg.inbox({ thread_id: t.thread_id })).messages, ...(await req.inbox({ thread_id: t.thread_id })).messages].map((m) => m.subject);
    assert.equal(subjects.length, 2);
    for (const s of subjects) {
      assert.ok(Buffer.byteLength(s, 'utf8') <= 512, `${Buffer.byteLength(s, 'utf8')} bytes`);
      assert.ok(isWellFormed(s), 'no lone surrogate');
      assert.match(s, /😀…$/);
    }
  });

  it('lets the parties of a task read an approval linked to it, and nobody else', async () => {
    const t = await call(req, '/task/create', { to: 'asg', title: 'needs a yes' });
    const a = await call(asg, '/approval/request', { reviewer: 'other', action: 'deploy', task_id: t.task_id });
    assert.equal((await call(req, '/approval/get', { approval_id: a.approval_id })).state, 'pending');
    const stranger = (await d.account('stranger')).client;
    assert.equal(await code(call(stranger, '/approval/get', { approval_id: a.approval_id })), 'not_reviewer');
  });

  it('takes every field at its limit and refuses it one over, by name, storing nothing', async () => {
    const big = (n: number) => 'x'.repeat(n);
    const base = { to: 'asg', title: 't' };
    const req = (await d.account('limits')).client;
    const count = async () => (await call(req, '/task/list', { role: 'requested', limit: TASK_LIMITS.listMax })).tasks.length as number;
    const n0 = await count();
    const refs = (k: number) => Array.from({ length: k }, (_, i) => ({ kind: 'file', locator: `f${i}` }));
    for (const [field, at, over] of [
      ['title', { ...base, title: big(TASK_LIMITS.titleBytes) }, { ...base, title: big(TASK_LIMITS.titleBytes + 1) }],
      ['instructions', { ...base, instructions: big(65_536) }, { ...base, instructions: big(65_537) }],
      ['refs', { ...base, refs: refs(8) }, { ...base, refs: refs(9) }],
    ] as const) {
      await call(req, '/task/create', at);
      await assert.rejects(call(req, '/task/create', over), (e: any) => e.code === 'too_large' && e.details.field === field, field);
    }
    assert.equal(await count(), n0 + 3, 'only the ones at the limit were stored');

    const t = await call(req, '/task/create', base);
    const data = (n: number) => ({ s: big(n - 8) }); // {"s":""} is 8 bytes of JSON
    await assert.rejects(
      call(asg, '/task/update', { task_id: t.task_id, state: 'working', note: big(TASK_LIMITS.noteBytes + 1) }),
      (e: any) => e.code === 'too_large' && e.details.field === 'note',
    );
    await assert.rejects(
      call(asg, '/task/update', { task_id: t.task_id, state: 'completed', result: { summary: big(TASK_LIMITS.summaryBytes + 1) } }),
      (e: any) => e.code === 'too_large' && e.details.field === 'result.summary',
    );
    await assert.rejects(
      call(asg, '/task/update', { task_id: t.task_id, state: 'completed', result: { data: data(TASK_LIMITS.dataBytes + 1) } }),
      (e: any) => e.code === 'too_large' && e.details.field === 'result.data',
    );
    assert.equal((await call(req, '/task/get', { task_id: t.task_id })).version, 1, 'nothing changed');
    const done = await call(asg, '/task/update', {
      task_id: t.task_id,
      state: 'completed',
      note: big(TASK_LIMITS.noteBytes),
      result: { summary: big(TASK_LIMITS.summaryBytes), data: data(TASK_LIMITS.dataBytes) },
    });
    assert.equal(done.state, 'completed');
    assert.equal(JSON.stringify(done.result.data).length, TASK_LIMITS.dataBytes);
  });
});
