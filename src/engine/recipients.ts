// Resolving a `to` address to the mailbox key a message lands in. Mail is never accepted for a
// recipient that does not exist; mail to an ended session goes to its live successor, or (for a
// reply to that session's own message) to its account, or is refused with session_ended.
import { MailError } from '../wire/errors.js';
import { formatAddress, type Address } from '../wire/address.js';
import { keyOfAccount, keyOfLineage, keyOfRoom, type AccountRecord, type MailKey, type SessionRecord, type Store, type StoredMessage } from '../store/types.js';
import type { SessionBook } from './sessions.js';
import { findSession } from './names.js';

export interface Recipient {
  key: MailKey;
  address: string;
  redirected: boolean;
  /** Accounts whose listeners ring for this message. */
  accounts: string[];
}

/** A room takes posts from its members only, unless it is open; the operator, who administers
 *  rooms, may post into any. (Like a mailing list; an everyone-room has every account as member.) */
export async function resolveRecipient(store: Store, book: SessionBook, to: Address, parent: StoredMessage | null, now: number, from: AccountRecord): Promise<Recipient> {
  if (to.kind === 'room') {
    const room = await store.getRoom(to.room);
    if (!room) throw new MailError('unknown_room', `no room #${to.room}`, { room: to.room });
    if (!room.open && !room.members.includes(from.id) && !from.permissions.operator)
      throw new MailError('permission_denied', `${from.id} is not a member of #${room.name}, which takes posts from its members only`, { need: 'member', room: room.name });
    return { key: keyOfRoom(room.name), address: formatAddress(to), redirected: false, accounts: room.members };
  }
  const account = await store.getAccount(to.participant);
  if (!account) throw new MailError('unknown_participant', `no account ${to.participant}`, { participant: to.participant });
  if (to.kind === 'direct') return { key: keyOfAccount(account.id), address: account.id, redirected: false, accounts: [account.id] };

  const session = await findSession(store, account.id, to.session, (s) => book.isLive(s));
  const live = await liveEnd(store, book, session, now);
  if (live) {
    return {
      key: keyOfLineage(account.id, live.lineage),
      address: `${account.id}/${live.id}`,
      redirected: live.id !== session.id,
      accounts: [account.id],
    };
  }
  if (parent && parent.fromAccount === account.id && parent.fromSession !== null && (await sameLineage(store, account.id, parent.fromSession, session))) {
    return { key: keyOfAccount(account.id), address: account.id, redirected: true, accounts: [account.id] };
  }
  throw new MailError('session_ended', `session ${to.session} of ${account.id} has ended; write to the account instead`, { account: account.id });
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

async function sameLineage(store: Store, account: string, sessionId: string, target: SessionRecord): Promise<boolean> {
  if (sessionId === target.id) return true;
  const s = await store.getSession(account, sessionId);
  return s !== null && s.lineage === target.lineage;
}
