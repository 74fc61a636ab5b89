// A mailbox with a row of every kind (accounts with a contact policy, rooms, a team with leaders,
// grants and its changes, contacts, a listener, sessions with a successor, names, records, meta,
// messages with idempotency keys and task changes, acks that leave gaps, tasks, approvals), and
// everything a reader or the directory can see of it: for the copy tests (export/import, backup,
// migrate-store).
import type { Store, TeamAction, TeamChange, TeamChangeRecord } from '../../src/store/types.js';
import { keyOfLineage } from '../../src/store/types.js';
import type { TeamCapability } from '../../src/wire/teams.js';
import { A, R, account, item, q, scope, send, session } from './store-conformance.js';
import { approval, task, taskQuery } from './task-conformance.js';
import { lease } from './lease-conformance.js';

/** A mailbox with a bit of everything, including acks that leave gaps and a successor lineage;
 *  and a lease unless `lease` is false (a copy that does not carry leases). */
export async function fill(s: Store, o: { lease?: boolean } = {}): Promise<void> {
  for (const id of ['alice', 'bob', 'carol']) await s.addAccount(account(id, { createdAt: 10 }));
  await s.addRoom('lobby', 5);
  await s.addRoom('all', 6, { everyone: true });
  await s.addMember('lobby', 'alice');
  await s.addMember('lobby', 'bob');
  // A team: leaders with and without grants, its recorded changes; contacts and a policy.
  await s.addRoom('crew', 7, { team: true });
  const change = (action: TeamAction, account: string | null, capability: TeamCapability | null = null): TeamChange => ({
    room: 'crew',
    at: 20,
    by: 'operator',
    action,
    account,
    capability,
  });
  for (const id of ['alice', 'bob', 'carol']) await s.addMember('crew', id, change('member.add', id));
  await s.setLeader('crew', 'alice', true, change('leader.add', 'alice'));
  await s.setLeader('crew', 'bob', true, change('leader.add', 'bob'));
  await s.setGrant('crew', 'alice', 'team.manage_members', true, change('grant', 'alice', 'team.manage_members'));
  await s.setGrant('crew', 'alice', 'timer.schedule_team', true, change('grant', 'alice', 'timer.schedule_team'));
  await s.setContactPolicy('carol', 'contacts_only');
  await s.addContact('carol', 'alice', 30);
  await s.addContact('carol', 'bob', 31);
  await s.addContact('alice', 'carol', 32);
  await s.setListener('bob', 'http://127.0.0.1:9/ring');
  await s.putRecord({ kind: 'timer', id: 't-1', value: '{"due":5}', updatedAt: 11 });
  await s.putRecord({ kind: 'timer', id: 't-2', value: '{"due":6}', updatedAt: 12 });
  await s.putRecord({ kind: 'wake_chain', id: 'bob', value: '{"steps":[]}', updatedAt: 13 });
  await s.initMeta('installation', 'abc');
  await s.registerSession(session('alice', 's-1', { slugBase: 'web', createdAt: 2_000 }));
  await s.registerSession(session('alice', 's-2', { slugBase: 'web', predecessor: 's-1', createdAt: 3_000 }));
  await s.registerSession(session('bob', 's-3', { slugBase: 'api', createdAt: 2_500 }));
  await s.addAlias('alice', 's-1', 'front');
  await s.setDeclared('bob', 's-3', { workingOn: 'parser', role: 'reviewer' });
  await s.touchSessions([{ account: 'bob', id: 's-3', at: 9_000 }]);
  await s.endSession('bob', 's-3', 9_500);
  const ms = [];
  for (let i = 0; i < 30; i++) {
    const to = [A('alice'), A('bob'), R('lobby'), R('all'), keyOfLineage('alice', 's-1')][i % 5] as string;
    ms.push(
      await send(s, to, {
        threadId: `t${i % 4}`,
        fromAccount: i % 2 ? 'alice' : 'bob',
        idempotencyKey: i % 3 === 0 ? `key-${i}` : null,
        fingerprint: i % 3 === 0 ? `fp-${i}` : null,
        refs: i % 7 === 0 ? [{ kind: 'file', locator: `/src/${i}.ts`, digest: 'd' }] : [],
        createdAt: 10_000 + i,
        // Some are a task's changes: the structured part moves with its message.
        ...(i % 4 === 1 ? { task: { task_id: `t-${i}`, state: i % 8 === 1 ? ('submitted' as const) : ('working' as const), version: 1 + (i % 3) } } : {}),
      }),
    );
  }
  const aliceScope = scope('alice', 's-1', await s.roomsOf('alice'));
  await s.ack(
    aliceScope,
    ms
      .filter((_, i) => i % 3 !== 1)
      .slice(0, 14)
      .map(item),
    77,
  );
  await s.ack(
    scope('bob', null, await s.roomsOf('bob')),
    ms
      .filter((m) => m.toKey !== A('alice'))
      .slice(0, 5)
      .map(item),
    88,
  );
  await s.createTask(task('t-1', { fromAccount: 'alice', toAccount: 'bob', idempotencyKey: 'tk', lastSeq: 3, result: { summary: 's', data: { a: [1, null] } } }), 0);
  await s.createTask(task('t-2', { fromAccount: 'bob', toAccount: 'alice', parentTaskId: 't-1', lastSeq: 4 }), 0);
  await s.createApproval(approval('a-1', { requesterAccount: 'bob', reviewerAccount: 'carol', taskId: 't-2', expiresAt: 99_000 }));
  await s.createApproval(approval('a-2', { state: 'approved', reason: 'fine', decidedAt: 12_000 }));
  // A lease: its epoch is durable (a fencing token is never handed out twice); the claim is not.
  if (o.lease !== false) await s.claimLease(lease('l-1'), { now: 1_000, maxPerHolder: 10, conflicts: () => true });
}

/** Everything a reader or the directory can see. */
export async function view(s: Store): Promise<unknown> {
  const scopes = [scope('alice', 's-1', await s.roomsOf('alice')), scope('bob', null, await s.roomsOf('bob')), scope('carol', null, await s.roomsOf('carol'))];
  const pages = [];
  for (const sc of scopes) {
    pages.push(await s.page(sc, q({ limit: 1000 })), await s.page(sc, q({ limit: 1000, pendingOnly: true })), await s.unread(sc));
  }
  return {
    accounts: await s.listAccounts(),
    rooms: await s.listRooms(),
    teamChanges: [await s.teamChanges('crew', null, 100), await s.teamChanges('crew', ((await s.teamChanges('crew', null, 2))[1] as TeamChangeRecord).id, 100)],
    contacts: [await s.listContacts('alice'), await s.listContacts('bob'), await s.listContacts('carol')],
    sessions: await s.listSessions(),
    names: await s.listNames(),
    listeners: [await s.getListener('alice'), await s.getListener('bob')],
    meta: await s.getMeta('installation'),
    records: [await s.listRecords('timer', '', 100), await s.listRecords('wake_chain', '', 100)],
    head: await s.headSeq(),
    threads: [await s.getThread('t0'), await s.getThread('t3')],
    pages,
    tasks: [await s.listTasks(taskQuery('bob')), await s.listTasks(taskQuery('bob', { role: 'requested' })), await s.taskChildren('t-1', 10)],
    approvals: [await s.getApproval('a-1'), await s.getApproval('a-2')],
  };
}
