// Resolving a `to` address to the mailbox key a message lands in. Mail is never accepted for a
// recipient that does not exist; mail to an ended session goes to its live successor, or waits for
// a pi or omp conversation to resume, or (for a reply to that session's own message) goes to its
// account, or is refused with session_ended.
import { MailError } from '../wire/errors.js';
import { formatAddress, type SingleAddress } from '../wire/address.js';
import { keyOfAccount, keyOfLineage, keyOfRoom, type AccountRecord, type MailKey, type SessionRecord, type Store, type StoredMessage } from '../store/types.js';
import type { SessionBook } from './sessions.js';
import { FULL_ID, PREFIX, findSession } from './names.js';
import { isExtensionProvider } from '../wire/capabilities.js';

export interface Recipient {
  key: MailKey;
  address: string;
  redirected: boolean;
  /** Accounts whose listeners ring for this message. */
  accounts: string[];
  /** The session it goes to, for session mail (its printed form then costs no read). */
  session?: SessionRecord;
  /** A pi or omp session that is not running: the mail waits until its conversation resumes. */
  waiting?: true;
  /** The recipient account of direct and session mail, as read to resolve it (its contact policy). */
  account?: AccountRecord;
}

/** A room takes posts from its members only, unless it is open; the operator, who administers
 *  rooms, may post into any. (Like a mailing list; an everyone-room has every account as member.) */
export async function resolveRecipient(store: Store, book: SessionBook, to: SingleAddress, parent: StoredMessage | null, now: number, from: AccountRecord): Promise<Recipient> {
  if (to.kind === 'room') {
    const room = await store.getRoom(to.room);
    if (!room) throw new MailError('unknown_room', `no room #${to.room}`, { room: to.room });
    if (!room.open && !room.members.includes(from.id) && !from.permissions.operator)
      throw new MailError('permission_denied', `${from.id} is not a member of #${room.name}, which takes posts from its members only`, { need: 'member', room: room.name });
    return { key: keyOfRoom(room.name), address: formatAddress(to), redirected: false, accounts: room.members };
  }
  const account = await store.getAccount(to.participant);
  if (!account) throw new MailError('unknown_participant', `no account ${to.participant}`, { participant: to.participant });
  if (to.kind === 'direct') return { key: keyOfAccount(account.id), address: account.id, redirected: false, accounts: [account.id], account };

  const session = await sessionFor(store, book, account.id, to.session, parent);
  const live = await liveEnd(store, book, session, now);
  if (live) {
    return {
      key: keyOfLineage(account.id, live.lineage),
      address: `${account.id}/${live.id}`,
      redirected: live.id !== session.id,
      accounts: [account.id],
      session: live,
      account,
    };
  }
  // A pi or omp conversation resumes with its extension, which delivers what waited for it.
  const end = await chainEnd(store, session);
  if (isExtensionProvider(end.corroborated.provider) && end.corroborated.providerSessionId) {
    return {
      key: keyOfLineage(account.id, end.lineage),
      address: `${account.id}/${end.id}`,
      redirected: end.id !== session.id,
      accounts: [account.id],
      session: end,
      waiting: true,
      account,
    };
  }
  if (parent && parent.fromAccount === account.id && parent.fromSession !== null && (await sameLineage(store, account.id, parent.fromSession, session))) {
    return { key: keyOfAccount(account.id), address: account.id, redirected: true, accounts: [account.id], account };
  }
  throw new MailError('session_ended', `session ${to.session} of ${account.id} has ended; write to the account instead`, { account: account.id });
}

/** The session `name` denotes; for a reply, checked against the printed form it was answering.
 *  Answers print the sender short (account/slug, account/s-…): a prefix of the parent's sender is
 *  that sender. A slug or alias is held by one lineage while that lineage is in the directory, and
 *  freed when it is pruned: a reply by a name that now holds another lineage, while the parent's
 *  sender has left the directory, is refused as a reply to the sender's full id would be, so it
 *  never reaches a newcomer that took the name. */
async function sessionFor(store: Store, book: SessionBook, account: string, name: string, parent: StoredMessage | null): Promise<SessionRecord> {
  const isLive = (s: SessionRecord): boolean => book.isLive(s);
  const sender = parent && parent.fromAccount === account ? parent.fromSession : null;
  if (!sender || name === sender || FULL_ID.test(name)) return findSession(store, account, name, isLive);
  const hex = PREFIX.exec(name)?.[1];
  if (hex !== undefined && sender.startsWith(`s-${hex}`)) return findSession(store, account, sender, isLive);
  const s = await findSession(store, account, name, isLive);
  // Another prefix, or the sender's own lineage: nothing freed was taken.
  if (hex !== undefined || s.id === sender || s.lineage === sender) return s;
  // The sender is in the directory, so its slug is still its own: this name never was (a send
  // to another session of the account, threaded under the parent).
  if (await store.getSession(account, sender)) return s;
  throw new MailError('unknown_session', `${account}/${name} now names another session than the one that wrote ${parent!.id}, which has left the directory; write to ${account}`, {
    participant: account,
    session: name,
    candidates: [account],
  });
}

/** The live session at the end of a successor chain, or null. Marks dead local sessions ended. */
async function liveEnd(store: Store, book: SessionBook, start: SessionRecord, now: number): Promise<SessionRecord | null> {
  let s: SessionRecord | null = start;
  for (let hops = 0; s && hops < 64; hops++) {
    if (book.isLive(s)) return s;
    if (s.endedAt === null) await store.endSession(s.account, s.id, now);
    s = s.successor ? await store.getSession(s.account, s.successor) : null;
  }
  return null;
}

/** The last session of a successor chain (every one of them ended). */
async function chainEnd(store: Store, start: SessionRecord): Promise<SessionRecord> {
  let s = start;
  for (let hops = 0; s.successor && hops < 64; hops++) {
    const next = await store.getSession(s.account, s.successor);
    if (!next) break;
    s = next;
  }
  return s;
}

async function sameLineage(store: Store, account: string, sessionId: string, target: SessionRecord): Promise<boolean> {
  if (sessionId === target.id) return true;
  const s = await store.getSession(account, sessionId);
  return s !== null && s.lineage === target.lineage;
}
