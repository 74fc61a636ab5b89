// A name used again is a new participant. Removing an account or room deletes its mail and
// everything kept about it; these are the engine's records of it that the store deletes in the
// same transaction, and the rule by which mail an earlier account of the same name sent is not
// this account's own.
import { lineageKeyPrefix, type AccountRecord, type RecordSweep, type StoredMessage } from '../store/types.js';
import { REC } from './wake-records.js';

/** Records keyed `<message id>|<recipient>…`: what happened to one message for one recipient. */
const PER_RECIPIENT = [REC.attempt, REC.claim, REC.surfaced];
/** As web-auth.ts names them: the password (id = account) and the login index (`account/…`). */
const WEB_PASSWORD = 'web_password';
const WEB_LOGIN_INDEX = 'web_session_of';

/** Everything of the account kept as records: its wake chains (which run programs), timers, hook
 *  notices, browser password and logins, and its receipts of mail that stays (room mail). */
export function accountSweep(account: string): RecordSweep {
  return {
    owned: [
      { kind: REC.chain, id: account },
      { kind: REC.chain, prefix: `${account}/` },
      { kind: REC.timer, prefix: `${account}|` },
      { kind: REC.notice, prefix: lineageKeyPrefix(account) },
      { kind: WEB_PASSWORD, id: account },
      { kind: WEB_LOGIN_INDEX, prefix: `${account}/` },
    ],
    byMessage: PER_RECIPIENT,
    byRecipient: PER_RECIPIENT,
  };
}

/** A room keeps nothing of its own beyond its messages' receipts. */
export function roomSweep(): RecordSweep {
  return { owned: [], byMessage: PER_RECIPIENT, byRecipient: [] };
}

/** Tells one account from a removed one of the same name (in practice: both would have to be
 *  created in the same millisecond with no mail sent in between). */
export const incarnationOf = (a: AccountRecord): string => `${a.createdAt}.${a.bornSeq}`;

/** Whether this account (not a removed one of the same name) sent the message. */
export function sentBy(account: AccountRecord, m: StoredMessage): boolean {
  return m.fromAccount === account.id && m.seq > account.bornSeq;
}
