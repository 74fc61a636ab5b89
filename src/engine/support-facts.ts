// What a support report and `m4a open` read of the daemon, for the operator on this machine only.
// counts() returns numbers: it reads accounts, sessions, rooms, leases and chains, the store's
// tallies (messages stored, from its per-mailbox totals; tasks and approvals by state) and unread
// counters, never a message (no subject, no body).
// sessions() is the directory's detailed card list, which /mail/directory serves to agents only
// (an operator has no session to read it as).
import { MailError } from '../wire/errors.js';
import { WAKE_KINDS, type SupportCountsResponse, type SupportSessionsRequest, type SupportSessionsResponse } from '../wire/support.js';
import type { SessionRecord, Store } from '../store/types.js';
import type { Caller } from './mail-engine.js';
import { presentSession } from './present.js';
import type { WakeChains } from './wake-chains.js';

/** What these reads need of the engine (MailEngine has them all). */
export interface SupportEngine {
  readonly store: Store;
  readonly clock: { now(): number };
  isLive(s: SessionRecord): boolean;
}

const LEASES_COUNTED = 100_000;

function operatorOnly(c: Caller): void {
  if (!c.account.permissions.operator) throw new MailError('permission_denied', 'this needs the operator credential', { need: 'operator' });
}

export async function supportCounts(e: SupportEngine, c: Caller, wake: WakeChains | undefined): Promise<SupportCountsResponse> {
  operatorOnly(c);
  const s = e.store;
  const [accounts, sessions, rooms, head, tallies] = await Promise.all([s.listAccounts(), s.listSessions(), s.listRooms(), s.headSeq(), s.tallies(e.clock.now())]);
  const byKind = { agent: 0, human: 0, service: 0 };
  for (const a of accounts) byKind[a.kind]++;
  const live = sessions.filter((x) => e.isLive(x)).length;

  let total = 0;
  let withUnread = 0;
  for (const a of accounts) {
    const u = await s.unread({ account: a.id, sessionKey: null, rooms: await s.roomsOf(a.id) });
    total += u;
    if (u > 0) withUnread++;
  }
  const leases = (await s.listLeases({ now: e.clock.now(), limit: LEASES_COUNTED })).length;

  const chains = wake ? (await wake.list(c)).chains : [];
  const kinds = Object.fromEntries(WAKE_KINDS.map((k) => [k, 0])) as Record<(typeof WAKE_KINDS)[number], number>;
  for (const ch of chains) for (const k of new Set(ch.steps.map((st) => st.kind))) kinds[k]++;

  return {
    accounts: byKind,
    sessions: { live, ended: sessions.length - live },
    rooms: { rooms: rooms.filter((r) => !r.team).length, everyone: rooms.filter((r) => r.everyone).length, teams: rooms.filter((r) => r.team).length },
    messages: { stored: tallies.messages, head_seq: Math.max(0, head) },
    unread: { total, accounts_with_unread: withUnread },
    tasks: tallies.tasks,
    approvals: tallies.approvals,
    leases: { live: leases },
    wake_chains: { chains: chains.length, ...kinds },
  };
}

export async function supportSessions(e: SupportEngine, c: Caller, req: SupportSessionsRequest): Promise<SupportSessionsResponse> {
  operatorOnly(c);
  const s = e.store;
  if (req.account !== undefined && !(await s.getAccount(req.account))) throw new MailError('unknown_participant', `no account ${req.account}`, { participant: req.account });
  const [sessions, names] = await Promise.all([s.listSessions(), s.listNames()]);
  const aliases = new Map<string, string[]>();
  for (const x of names) if (x.kind === 'alias') aliases.set(`${x.account}/${x.lineage}`, [...(aliases.get(`${x.account}/${x.lineage}`) ?? []), x.name]);
  const listed = sessions.filter((x) => (req.account === undefined || x.account === req.account) && (req.include_ended || e.isLive(x))).sort((a, b) => b.lastSeen - a.lastSeen);
  return { sessions: listed.map((x) => ({ account: x.account, ...presentSession(x, e.isLive(x), aliases.get(`${x.account}/${x.lineage}`) ?? []) })) };
}
