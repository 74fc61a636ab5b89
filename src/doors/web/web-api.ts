// What a logged-in person can ask of /web/api/*: the operations of wire/operations.ts whose callers
// include 'person' (the same engine calls agents make, with a Caller that has no session). Only
// those are reachable, so a route added later (wake chains run programs) is not unless it says so,
// and no route may create, hand out or take away an operator credential (operator-guard.ts).
import type { z } from 'zod';
import type * as W from '../../wire/ops.js';
import * as WW from '../../wire/web.js';
import { OPERATIONS, OPERATION_NAMES, webPathOf, type OperationName, type OperationSpec } from '../../wire/operations.js';
import { parseInput } from '../../wire/validate.js';
import { MailError } from '../../wire/errors.js';
import type { Caller, MailEngine } from '../../engine/mail-engine.js';
import type { AdminOps } from '../../engine/admin-ops.js';
import { counted, runOperation, type OpContext } from '../handlers.js';
import type { Observer } from '../../engine/observer.js';
import type { WakeChains } from '../../engine/wake-chains.js';
import { refuseOperatorEscalation } from './operator-guard.js';

/** The inbox page shows at most this many recent messages, previews cut to PREVIEW_CHARS. */
const RECENT_MAX = 200;
const PREVIEW_CHARS = 240;
const PAGE = 256;
/** A walk to the newest mail reads at most this many pages (then says `truncated`). */
const MAX_PAGES = 40;
/** A parked live update answers after at most this long (the browser asks again at once). */
const LIVE_WAIT_SECS = 30;

export interface WebApiContext {
  engine: MailEngine;
  admin: AdminOps;
  /** Read only here: operators see the chains; only `m4a wake` on the machine changes them. */
  chains?: WakeChains;
  /** Told of each call's outcome, with door `web` (the daemon's metrics). */
  observer?: Observer;
}

const preview = (m: W.MessageOut): W.MessageOut => (m.body !== undefined && m.body.length > PREVIEW_CHARS ? { ...m, body: `${m.body.slice(0, PREVIEW_CHARS)}…` } : m);

/** The newest mail first, acknowledged or not, and the cursor live updates continue from. */
async function recent(e: MailEngine, c: Caller): Promise<{ messages: W.MessageOut[]; next_cursor: string | null; unread: number; truncated: boolean }> {
  let after: string | undefined;
  let kept: W.MessageOut[] = [];
  let last: W.InboxResponse | undefined;
  let pages = 0;
  for (; pages < MAX_PAGES; pages++) {
    last = await e.inbox(c, { limit: PAGE, include_acked: true, ...(after ? { after } : {}) });
    kept = kept.concat(last.messages.map(preview)).slice(-RECENT_MAX);
    if (last.messages.length < PAGE || !last.next_cursor) break;
    after = last.next_cursor;
  }
  return { messages: kept.reverse(), next_cursor: last?.next_cursor ?? null, unread: last?.unread ?? 0, truncated: pages === MAX_PAGES };
}

/** A plain room is not a team: the member's own view of it is refused so. */
const unlessNoTeam = (e: unknown): null => {
  if (e instanceof MailError && e.code === 'unknown_team') return null;
  throw e;
};

/** The person's teams: of its rooms, those whose member view (the engine's m4a_team show) exists. */
async function teamsOf(e: MailEngine, c: Caller): Promise<string[]> {
  const rooms = (await e.whoami(c)).rooms.map((r) => r.slice(1));
  const views = await Promise.all(rooms.map((team) => e.teams.action(c, { action: 'show', team }).catch(unlessNoTeam)));
  return views.flatMap((v) => (v ? [v.name] : []));
}

/** POST /web/api/me */
export async function webMe(e: MailEngine, c: Caller): Promise<WW.WebMeResponse> {
  const [unread, teams] = await Promise.all([e.unread(c), teamsOf(e, c)]);
  return { account: c.account.id, label: c.account.label, operator: c.account.permissions.operator, unread: unread.unread, teams };
}

/** POST /web/api/inbox: without a cursor the newest mail; with one, a live update. */
export async function webInbox(e: MailEngine, c: Caller, i: z.output<typeof WW.WebInboxRequest>, signal: AbortSignal): Promise<WW.WebInboxResponse> {
  if (i.after === undefined || i.after === null) return recent(e, c);
  const r = await e.inbox(c, { after: i.after, include_acked: true, limit: PAGE, wait_secs: Math.min(i.wait_secs ?? 0, LIVE_WAIT_SECS) }, { maxWaitSecs: LIVE_WAIT_SECS, signal });
  return { ...r, messages: r.messages.map(preview) };
}

/** POST /web/api/admin/overview: read only; the engine checks the operator permission. */
export async function webOverview(x: { engine: MailEngine; admin: AdminOps; wake?: WakeChains | undefined }, c: Caller): Promise<WW.WebOverviewResponse> {
  const [accounts, rooms, listeners] = [await x.admin.accountList(c), await x.admin.roomList(c), await x.admin.listenerList(c)];
  // Each team with its latest changes; one removed between the list and its show is left out.
  const listed = (await x.engine.teams.list(c)).teams;
  const shown = await Promise.all(listed.map((t) => x.engine.teams.show(c, { team: t.name, changes: WW.WEB_TEAM_CHANGES }).catch(unlessNoTeam)));
  const wake = x.wake ? (await x.wake.list(c)).chains : [];
  return { accounts: accounts.accounts, rooms: rooms.rooms, teams: shown.flatMap((t) => (t ? [t] : [])), listeners, wake };
}

const WEB_OPERATIONS = new Map(
  OPERATION_NAMES.flatMap((n): [string, OperationName][] => {
    const p = webPathOf(n);
    return p ? [[p.slice('/web/api/'.length), n]] : [];
  }),
);

/** The operation a /web/api/<name> call runs, if any (login, logout and the throttle are the
 *  door's own routes, not operations). */
export const webOperation = (name: string): OperationName | undefined => WEB_OPERATIONS.get(name);

/** The browser names an operation by its web path; only operations persons may call have one. */
export async function runWebApi(name: string, ctx: WebApiContext, c: Caller, body: unknown, signal: AbortSignal): Promise<unknown> {
  const op = WEB_OPERATIONS.get(name);
  if (!op) throw new MailError('unknown_route', `no route /web/api/${name}`);
  const spec: OperationSpec = OPERATIONS[op];
  const x: OpContext = { engine: ctx.engine, admin: ctx.admin, wake: ctx.chains, door: 'web', signal, afterAnswer: () => undefined, observer: ctx.observer };
  return counted(x, op, async () => {
    const input: unknown = parseInput(spec.input, body);
    if (spec.callers.includes('operator')) await refuseOperatorEscalation(ctx.engine, spec.path.slice('/admin/'.length), input);
    return runOperation(op, x, c, input as never);
  });
}
