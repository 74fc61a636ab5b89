// What a logged-in person can ask of /web/api/*: the same engine calls agents make (with a Caller
// that has no session), and for operators an allow-list of the operator registry. The allow-list
// is explicit so that routes added later (wake chains run programs) never become reachable here,
// and no route may create, hand out or take away an operator credential (operator-guard.ts).
import { z } from 'zod';
import * as W from '../../wire/ops.js';
import { parseInput } from '../../wire/validate.js';
import { MailError } from '../../wire/errors.js';
import type { Caller, MailEngine } from '../../engine/mail-engine.js';
import type { AdminOps } from '../../engine/admin-ops.js';
import { ADMIN_BY_PATH } from '../admin-ops.js';
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

const InboxInput = z.strictObject({ after: z.string().max(64).nullable().optional(), wait_secs: z.number().finite().min(0).optional() });

const OPERATOR_ROUTES = new Set([
  'account/add',
  'account/remove',
  'account/rotate',
  'room/add',
  'room/remove',
  'room/member/add',
  'room/member/remove',
  'listener',
  'listener/remove',
  'user/create',
  'user/passwd',
  'user/revoke-sessions',
]);

export interface WebApiContext {
  engine: MailEngine;
  admin: AdminOps;
  /** Read only here: operators see the chains; only `m4a wake` on the machine changes them. */
  chains?: WakeChains;
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

export async function runWebApi(name: string, ctx: WebApiContext, c: Caller, body: unknown): Promise<unknown> {
  const e = ctx.engine;
  switch (name) {
    case 'me':
      parseInput(W.EmptyRequest, body);
      return { account: c.account.id, label: c.account.label, operator: c.account.permissions.operator, unread: (await e.unread(c)).unread };
    case 'inbox': {
      const i = parseInput(InboxInput, body);
      if (i.after === undefined || i.after === null) return recent(e, c);
      const r = await e.inbox(c, { after: i.after, include_acked: true, limit: PAGE, wait_secs: Math.min(i.wait_secs ?? 0, LIVE_WAIT_SECS) }, { maxWaitSecs: LIVE_WAIT_SECS });
      return { ...r, messages: r.messages.map(preview) };
    }
    case 'get':
      return e.get(c, parseInput(W.GetRequest, body));
    case 'send':
      return e.send(c, parseInput(W.SendRequest, body));
    case 'ack':
      return e.ack(c, parseInput(W.AckRequest, body));
    case 'directory':
      parseInput(W.EmptyRequest, body);
      return e.directory(c);
    case 'admin/overview': {
      parseInput(W.EmptyRequest, body);
      const [accounts, rooms, listeners] = [await ctx.admin.accountList(c), await ctx.admin.roomList(c), await ctx.admin.listenerList(c)];
      const wake = ctx.chains ? (await ctx.chains.list(c)).chains : [];
      return { accounts: accounts.accounts, rooms: rooms.rooms, listeners, wake };
    }
  }
  const sub = name.startsWith('admin/') ? name.slice('admin/'.length) : null;
  const route = sub !== null && OPERATOR_ROUTES.has(sub) ? ADMIN_BY_PATH.get(`/admin/${sub}`) : undefined;
  if (!route) throw new MailError('unknown_route', `no route /web/api/${name}`);
  const input = parseInput(route.input, body);
  await refuseOperatorEscalation(e, sub!, input);
  return route.run(ctx.admin, c, input as never);
}
