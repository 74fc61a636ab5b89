// Each operation of wire/operations.ts bound to the engine call that serves it: the one place a
// door learns what an operation does. The mapped type makes a missing binding a type error.
import type { Observer } from '../engine/observer.js';
import { MailError } from '../wire/errors.js';
import { LIMITS } from '../wire/limits.js';
import * as T from '../wire/tasks.js';
import * as L from '../wire/leases.js';
import * as LT from '../wire/lease-tool.js';
import { parseInput } from '../wire/validate.js';
import { inboxWaitFor } from '../wire/mcp-inbox.js';
import { OPERATIONS, OPERATION_NAMES, servedOverBearer, type OpInput, type OperationName, type OperationSpec } from '../wire/operations.js';
import type { Caller, MailEngine } from '../engine/mail-engine.js';
import type { AdminOps } from '../engine/admin-ops.js';
import type { WakeChains } from '../engine/wake-chains.js';
import { webInbox, webMe, webOverview } from './web/web-api.js';
import { supportCounts, supportSessions } from '../engine/support-facts.js';
import type { RelayLink } from './relay-link/relay-link.js';

/** Where a request came in. The stream door's inbox waits as long as HTTP's. */
export type Door = 'http' | 'mcp' | 'web' | 'stream';

/** What a handler may use beyond the caller and its input. */
export interface OpContext {
  engine: MailEngine;
  admin: AdminOps;
  /** Delivery chains; absent when the daemon runs without wake dispatch. */
  wake?: WakeChains | undefined;
  door: Door;
  /** Aborted when the client goes away before its answer: parked waits end at once. */
  signal: AbortSignal;
  /** Runs once the answer has been written (a stop must not cut its own answer off). */
  afterAnswer(fn: () => void): void;
  onStopRequest?: ((when: 'now' | 'idle') => void) | undefined;
  /** Told of every operation's outcome (the daemon's metrics). */
  observer?: Observer | undefined;
  /** The relay link (`m4a connect`); absent on a door that does not serve it. */
  relayLink?: RelayLink | undefined;
}

type Handler<K extends OperationName> = (x: OpContext, c: Caller, i: OpInput<K>) => Promise<unknown>;

const chains = (x: OpContext): WakeChains => {
  if (!x.wake) throw new MailError('unknown_route', 'this daemon runs no delivery chains');
  return x.wake;
};

const relayLink = (x: OpContext): RelayLink => {
  if (!x.relayLink) throw new MailError('unknown_route', 'this door serves no relay link settings');
  return x.relayLink;
};

/** The fields that were given (a flat MCP request names every action's fields). */
const given = (o: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/** m4a_task: the action's own schema checks the fields, so errors name them as over HTTP. */
function taskAction(x: OpContext, c: Caller, i: OpInput<'task'>): Promise<unknown> {
  const t = x.engine.tasks;
  switch (i.action) {
    case 'create':
      return t.create(
        c,
        parseInput(T.TaskCreateRequest, given({ to: i.to, title: i.title, instructions: i.instructions, parent_task_id: i.parent_task_id, idempotency_key: i.idempotency_key })),
      );
    case 'update':
      return t.update(c, parseInput(T.TaskUpdateRequest, given({ task_id: i.task_id, state: i.state, note: i.note, result: i.result, epoch: i.epoch })));
    case 'cancel':
      return t.cancel(c, parseInput(T.TaskCancelRequest, given({ task_id: i.task_id, reason: i.note })));
    case 'list':
      return t.list(c, parseInput(T.TaskListRequest, given({ role: i.role ?? (i.pool ? 'pool' : 'assigned'), pool: i.pool, state: i.state, after: i.after })));
    case 'claim':
      return t.pool.claim(c, parseInput(T.TaskClaimRequest, given({ task_id: i.task_id, pool: i.pool })));
  }
}

function approvalAction(x: OpContext, c: Caller, i: OpInput<'approval'>): Promise<unknown> {
  const a = x.engine.approvals;
  switch (i.action) {
    case 'request':
      return a.request(c, parseInput(T.ApprovalRequest, given({ reviewer: i.reviewer, action: i.what, details: i.details, task_id: i.task_id })));
    case 'decide':
      return a.decide(c, parseInput(T.ApprovalDecideRequest, given({ approval_id: i.approval_id, decision: i.decision, reason: i.reason })));
    case 'get':
      return a.get(c, parseInput(T.ApprovalGetRequest, given({ approval_id: i.approval_id })), x.signal);
  }
}

/** m4a_reserve: file reservations (path: leases) in the flat form models fill in. */
function reserveAction(x: OpContext, c: Caller, i: OpInput<'reserve'>): Promise<unknown> {
  const l = x.engine.leases;
  switch (i.action) {
    case 'claim':
      return l.claimPaths(
        c,
        parseInput(
          LT.ReserveClaimRequest,
          given({ paths: i.paths, root: i.root, mode: i.shared === undefined ? undefined : i.shared ? 'shared' : 'exclusive', ttl_secs: i.ttl_secs, reason: i.reason }),
        ),
      );
    case 'renew':
      return l.renew(c, parseInput(L.LeaseRenewRequest, given({ lease_id: i.lease_id, epoch: i.epoch, ttl_secs: i.ttl_secs })));
    case 'release':
      return l.release(c, parseInput(L.LeaseReleaseRequest, given({ lease_id: i.lease_id, epoch: i.epoch })));
    case 'list': {
      const q = parseInput(LT.ReserveListRequest, given({ root: i.root }));
      return l.list(c, { resource_prefix: 'path:', ...q });
    }
  }
}

export const HANDLERS: { readonly [K in OperationName]: Handler<K> } = {
  send: (x, c, i) => x.engine.send(c, i),
  reply: (x, c, i) => x.engine.reply(c, i),
  inbox: (x, c, i) => {
    // Over MCP, a filter makes the call wait_for (wire/mcp-inbox.ts).
    const waitFor = x.door === 'mcp' ? inboxWaitFor(i) : null;
    if (waitFor) return x.engine.waitFor(c, waitFor, x.signal);
    return x.engine.inbox(
      c,
      i,
      x.door === 'mcp' ? { maxWaitSecs: LIMITS.waitSecsMcp, budgetBytes: LIMITS.mcpInboxBudgetBytes, signal: x.signal } : { maxWaitSecs: LIMITS.waitSecsHttp, signal: x.signal },
    );
  },
  ack: (x, c, i) => x.engine.ack(c, i),
  get: (x, c, i) => x.engine.get(c, i),
  search: (x, c, i) => x.engine.search(c, i),
  wait_for: (x, c, i) => x.engine.waitFor(c, i, x.signal),
  attachment: async (x, c, i) => x.engine.email.attachment(c, await x.engine.scope(c), i.message_id, i.n),
  unread: (x, c) => x.engine.unread(c),
  whoami: (x, c) => x.engine.whoami(c),
  status: (x, c, i) => x.engine.status(c, i),
  directory: (x, c, i) => x.engine.directory(c, i),
  remind: (x, c, i) => x.engine.remind(c, i),

  task: (x, c, i) => taskAction(x, c, i),
  'task.create': (x, c, i) => x.engine.tasks.create(c, i),
  'task.get': (x, c, i) => x.engine.tasks.get(c, i, x.signal),
  'task.list': (x, c, i) => x.engine.tasks.list(c, i),
  'task.update': (x, c, i) => x.engine.tasks.update(c, i),
  'task.cancel': (x, c, i) => x.engine.tasks.cancel(c, i),
  'task.claim': (x, c, i) => x.engine.tasks.pool.claim(c, i),
  approval: (x, c, i) => approvalAction(x, c, i),
  'approval.request': (x, c, i) => x.engine.approvals.request(c, i),
  'approval.decide': (x, c, i) => x.engine.approvals.decide(c, i),
  'approval.get': (x, c, i) => x.engine.approvals.get(c, i, x.signal),

  reserve: (x, c, i) => reserveAction(x, c, i),
  'lease.claim': (x, c, i) => x.engine.leases.claim(c, i),
  'lease.renew': (x, c, i) => x.engine.leases.renew(c, i),
  'lease.release': (x, c, i) => x.engine.leases.release(c, i),
  'lease.list': (x, c, i) => x.engine.leases.list(c, i),
  'lease.check': (x, c, i) => x.engine.leases.check(c, i),

  notice: (x, c, i) => x.engine.notice(c, i, { signal: x.signal }),
  listen: (x, c, i) => x.engine.listen(c, i.on),
  'timer.list': (x, c) => x.engine.timerList(c),
  'timer.snooze': (x, c, i) => x.engine.timerSnooze(c, i),
  'timer.clear': (x, c, i) => x.engine.timerClear(c, i),
  'timer.team': (x, c, i) => x.engine.teams.remind(c, i),
  team: (x, c, i) => x.engine.teams.action(c, i),
  'contacts.list': (x, c) => x.engine.contacts.list(c),
  'contacts.add': (x, c, i) => x.engine.contacts.add(c, i),
  'contacts.remove': (x, c, i) => x.engine.contacts.remove(c, i),
  'contacts.accept': (x, c, i) => x.engine.contacts.accept(c, i),
  'contacts.decline': (x, c, i) => x.engine.contacts.decline(c, i),
  'policy.set': (x, c, i) => x.engine.contacts.setPolicy(c, i),
  attention: (x, c, i) => x.engine.attention.set(c, i),
  receipts: (x, c, i) => x.engine.receiptsOf(c, i),

  'account.add': (x, c, i) => x.admin.accountAdd(c, i),
  'account.rotate': (x, c, i) => x.admin.accountRotate(c, i.id),
  'account.remove': (x, c, i) => x.admin.accountRemove(c, i.id),
  'account.list': (x, c) => x.admin.accountList(c),
  'room.add': (x, c, i) => x.admin.roomAdd(c, i.name, { everyone: i.everyone ?? false, open: i.open ?? false }),
  'room.set': (x, c, i) => x.admin.roomSet(c, i.name, i.open),
  'room.remove': (x, c, i) => x.admin.roomRemove(c, i.name),
  'room.list': (x, c) => x.admin.roomList(c),
  'room.member.add': (x, c, i) => x.admin.memberAdd(c, i.room, i.account),
  'room.member.remove': (x, c, i) => x.admin.memberRemove(c, i.room, i.account),
  'team.create': (x, c, i) => x.engine.teams.create(c, i),
  'team.member.add': (x, c, i) => x.engine.teams.memberAdd(c, i),
  'team.member.remove': (x, c, i) => x.engine.teams.memberRemove(c, i),
  'team.leader.add': (x, c, i) => x.engine.teams.leaderAdd(c, i),
  'team.leader.remove': (x, c, i) => x.engine.teams.leaderRemove(c, i),
  'team.grant': (x, c, i) => x.engine.teams.grant(c, i),
  'team.revoke': (x, c, i) => x.engine.teams.revoke(c, i),
  'team.list': (x, c) => x.engine.teams.list(c),
  'team.show': (x, c, i) => x.engine.teams.show(c, i),
  'account.policy': (x, c, i) => x.engine.contacts.adminSetPolicy(c, i),
  'listener.set': (x, c, i) => x.admin.listenerSet(c, i.account, i.url),
  'listener.remove': (x, c, i) => x.admin.listenerRemove(c, i.account),
  'user.create': (x, c, i) => x.admin.userCreate(c, i),
  'user.passwd': (x, c, i) => x.admin.userPassword(c, i),
  'user.revoke-sessions': (x, c, i) => x.admin.userRevokeSessions(c, i.id),
  'retention.set': (x, c, i) => x.engine.retention.set(c, i),
  'retention.list': (x, c) => x.engine.retention.list(c),
  'retention.run': (x, c) => x.engine.retention.run(c),
  'daemon.stop': (x, c, i) => {
    if (!c.account.permissions.operator) throw new MailError('permission_denied', 'this needs the operator credential', { need: 'operator' });
    x.afterAnswer(() => x.onStopRequest?.(i.when ?? 'now'));
    return Promise.resolve({ ok: true });
  },

  'wake.set': (x, c, i) => chains(x).set(c, i),
  'wake.list': (x, c) => chains(x).list(c),
  'wake.clear': (x, c, i) => chains(x).clear(c, i),

  'connect.configure': (x, c, i) => relayLink(x).configure(c, i),
  'connect.update': (x, c, i) => relayLink(x).update(c, i),
  'connect.removeuser': (x, c, i) => relayLink(x).removeUser(c, i.human_mailbox),
  'connect.start': (x, c) => relayLink(x).setEnabled(c, true),
  'connect.stop': (x, c) => relayLink(x).setEnabled(c, false),
  'connect.status': (x, c) => relayLink(x).status(c),

  'support.counts': (x, c) => supportCounts(x.engine, c, x.wake),
  'support.sessions': (x, c, i) => supportSessions(x.engine, c, i),

  'import.omp-mail': (x, c, i) => x.admin.importOmpMail(c, i),
  'import.interagentmail': (x, c, i) => x.admin.importMail(c, 'interagentmail', i),
  'import.agent-mail': (x, c, i) => x.admin.importMail(c, 'agent-mail', i),

  'web.me': (x, c) => webMe(x.engine, c),
  'web.inbox': (x, c, i) => webInbox(x.engine, c, i, x.signal),
  'web.overview': (x, c) => webOverview(x, c),
};

/** Runs operation `name` for a caller whose door already checked it may call it. */
export function runOperation<K extends OperationName>(name: K, x: OpContext, c: Caller, input: OpInput<K>): Promise<unknown> {
  return (HANDLERS[name] as Handler<K>)(x, c, input);
}

/** Checks a request body against the operation's input schema (the named errors of
 *  wire/validate.ts) and runs it: what every door does once it chose the caller. */
export function callOperation(name: OperationName, x: OpContext, c: Caller, body: unknown): Promise<unknown> {
  return counted(x, name, () => runOperation(name, x, c, parseInput(OPERATIONS[name].input, body) as never));
}

/** Runs `run` as operation `name` of door `x.door`, telling the observer whether it answered or
 *  which code refused it: the one place an operation's outcome is counted (the browser door's
 *  /web/api calls run their own checks inside it). */
export function counted<T>(x: OpContext, name: OperationName, run: () => Promise<T>): Promise<T> {
  const ob = x.observer;
  if (!ob) return run();
  const refused = (err: unknown): never => {
    ob.operation(x.door, name, errorCode(err));
    throw err;
  };
  let p: Promise<T>;
  try {
    p = run();
  } catch (err) {
    return refused(err);
  }
  return p.then((out) => {
    ob.operation(x.door, name, null);
    return out;
  }, refused);
}

/** The code a refusal is counted under: a MailError's own, else `internal`. */
export function errorCode(err: unknown): string {
  return err instanceof MailError ? err.code : 'internal';
}

const OPERATION_BY_NAME = new Map<string, OperationName>(OPERATION_NAMES.filter(servedOverBearer).map((n) => [n, n]));

/** The operation a bearer may call by `name` on a door, as `OPERATION_BY_PATH` finds it by path, or
 *  undefined: a browser-only operation, or a wake operation on a daemon without delivery chains. */
export function bearerOperation(name: string, hasWake: boolean): { name: OperationName; spec: OperationSpec } | undefined {
  const n = OPERATION_BY_NAME.get(name);
  if (n === undefined || (n.startsWith('wake.') && !hasWake)) return undefined;
  return { name: n, spec: OPERATIONS[n] };
}

/** The operation served at an HTTP path (POST), and the one an MCP tool name calls. */
export const OPERATION_BY_PATH = new Map<string, OperationName>(OPERATION_NAMES.filter(servedOverBearer).map((n) => [OPERATIONS[n].path, n]));
export const OPERATION_BY_TOOL = new Map<string, OperationName>(
  OPERATION_NAMES.flatMap((n): [string, OperationName][] => {
    const tool = OPERATIONS[n].tool;
    return tool ? [[tool, n]] : [];
  }),
);
