// team: and leader: mail (docs/teams.md): expanded at send time into one copy per other current
// member (or leader), each stored through MailPost.deliver as direct mail to that account, so it
// lands in the account's own inbox and is acknowledged per account; every copy keeps the address it
// was written to (`team:NAME`), and the copies of one send share a thread. The roster is read once:
// a member removed while the copies are stored still gets its copy (it was a member when the send
// read the roster); a send that reads the roster after the removal never reaches it.
//
// Idempotency: each copy is stored with its own key, `tm.` + 32 hex of SHA-256(key, member), so
// the store deduplicates it per copy; the first answer is kept as a record under the caller's key
// for the idempotency window, so a retry returns the same copies (duplicate: true) even after the
// roster changed, and stores nothing new.
import { createHash } from 'node:crypto';
import { MailError } from '../wire/errors.js';
import { formatAddress, isTeamAddress } from '../wire/address.js';
import type * as W from '../wire/ops.js';
import type { Store, StoredMessage } from '../store/types.js';
import type { Clock } from './clock.js';
import type { DeliverOptions } from './mail-post.js';
import type { Caller } from './mail-engine.js';
import { teamOfMember } from './team-rules.js';
import { sendFingerprint } from './sent-message.js';

/** Kept answers of team sends with an idempotency key: id `<account>|<key>` → KeptSend. */
export const TEAM_SEND_RECORD = 'team_send';

export interface TeamSendDeps {
  store: Store;
  clock: Clock;
  idempotencyWindowMs: number;
  /** MailPost.deliver: one checked copy (recipient rules, contact policy, loop guard, wakes). */
  deliver(c: Caller, req: W.SendRequest, parent: StoredMessage | null, opts: DeliverOptions): Promise<{ answer: W.SendResponse; message: StoredMessage }>;
}

interface KeptSend {
  at: number;
  fingerprint: string;
  answer: W.SendResponse;
}

export const copyKey = (key: string, member: string): string => `tm.${createHash('sha256').update(`${key}\n${member}`).digest('hex').slice(0, 32)}`;

const detail = (e: MailError, k: string): string => {
  const v = e.details[k];
  return typeof v === 'string' ? v : '';
};

type Copy = { member: string; ok: { answer: W.SendResponse; message: StoredMessage } } | { member: string; refused: MailError } | { member: string; gone: true };

export async function teamSend(d: TeamSendDeps, c: Caller, req: W.SendRequest, parent: StoredMessage | null): Promise<W.SendResponse> {
  if (!isTeamAddress(req.to)) throw new MailError('internal', 'teamSend takes team: and leader: mail only');
  const to = req.to;
  const writtenTo = formatAddress(to);
  const team = await teamOfMember(d.store, c, to.team);
  const me = c.account.id;
  const recipients = to.kind === 'team' ? team.members.filter((m) => m !== me) : team.leaders.map((l) => l.account).filter((m) => m !== me && team.members.includes(m));
  if (recipients.length === 0) throw new MailError('no_recipients', `${writtenTo} reaches nobody but you`, { team: to.team });

  const key = req.idempotency_key;
  const fingerprint = key === undefined ? null : sendFingerprint(req);
  const keptId = key === undefined ? null : `${me}|${key}`;
  if (keptId !== null) {
    const rec = await d.store.getRecord(TEAM_SEND_RECORD, keptId);
    const kept = rec ? (JSON.parse(rec.value) as KeptSend) : null;
    if (kept && kept.at >= d.clock.now() - d.idempotencyWindowMs) {
      if (kept.fingerprint !== fingerprint)
        throw new MailError('idempotency_conflict', `idempotency key ${key} was used for a different message`, { message_id: kept.answer.message_id });
      return { ...kept.answer, duplicate: true };
    }
  }

  const one = async (member: string, threadId: string | undefined): Promise<Copy> => {
    const copy: W.SendRequest = { ...req, to: { kind: 'direct', participant: member } };
    delete copy.request_contact;
    if (key !== undefined) copy.idempotency_key = copyKey(key, member);
    try {
      return { member, ok: await d.deliver(c, copy, parent, { writtenTo, ...(threadId !== undefined ? { threadId } : {}) }) };
    } catch (err) {
      if (err instanceof MailError && err.code === 'contact_refused') return { member, refused: err };
      // The account was removed since the roster was read: there is nobody to give the copy to.
      if (err instanceof MailError && err.code === 'unknown_participant' && err.details?.['participant'] === member) return { member, gone: true };
      throw err;
    }
  };

  // The first stored copy names the thread; the others join it side by side.
  const copies: Copy[] = [];
  let i = 0;
  let thread: string | undefined;
  for (; i < recipients.length && thread === undefined; i++) {
    const r = await one(recipients[i]!, undefined);
    copies.push(r);
    if ('ok' in r) thread = r.ok.message.threadId;
  }
  copies.push(...(await Promise.all(recipients.slice(i).map((m) => one(m, thread)))));

  const stored = copies.flatMap((x) => ('ok' in x ? [{ member: x.member, ...x.ok }] : []));
  const refused = copies.flatMap((x) => ('refused' in x ? [x.refused] : []));
  const first = stored[0];
  if (!first) {
    if (refused[0]) throw refused[0];
    throw new MailError('no_recipients', `${writtenTo} reaches nobody but you`, { team: to.team });
  }
  const answer: W.SendResponse = {
    ...first.answer,
    to: writtenTo,
    redirected: false,
    duplicate: stored.every((x) => x.answer.duplicate),
    expanded: stored.map((x) => ({ to: x.member, message_id: x.message.id })),
    ...(refused.length > 0 ? { refused: refused.map((e) => ({ recipient: detail(e, 'recipient'), policy: detail(e, 'policy') })) } : {}),
  };
  delete answer.not_running;
  if (keptId !== null && fingerprint !== null) {
    const kept: KeptSend = { at: d.clock.now(), fingerprint, answer: { ...answer, duplicate: false } };
    await d.store.putRecord({ kind: TEAM_SEND_RECORD, id: keptId, value: JSON.stringify(kept), updatedAt: kept.at });
  }
  return answer;
}
