// A name used again is a new participant. Removing an account or room deletes its mail and
// everything kept about it; these are the engine's records of it that the store deletes in the
// same transaction, and the rule by which mail an earlier account of the same name sent is not
// this account's own.
import { lineageKeyPrefix, type AccountRecord, type RecordSweep, type Store, type StoredMessage } from '../store/types.js';
import { REC } from './wake-records.js';
import { EMAIL_BY_MESSAGE, EMAIL_REC } from './email-records.js';

/** Records keyed `<message id>|<recipient>…`: what happened to one message for one recipient. */
const PER_RECIPIENT = [REC.attempt, REC.claim, REC.surfaced];
/** Records keyed `<message id>|…`: deleted with their message (its receipts, its e-mail parts). */
const BY_MESSAGE = [...PER_RECIPIENT, ...EMAIL_BY_MESSAGE];
/** Records keyed `<one party>|<the other>[|…]`: a contact request between two accounts. */
const CONTACT_KINDS = [REC.contactRequest, REC.contactAsked, REC.contactHeld, REC.contactClaim];
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
      // Quiet periods (engine/attention.ts) and the wakes they hold.
      { kind: REC.attention, id: account },
      { kind: REC.attention, prefix: `${account}/` },
      { kind: REC.held, prefix: `${account}|` },
      { kind: REC.held, prefix: `${account}/` },
      { kind: WEB_PASSWORD, id: account },
      { kind: WEB_LOGIN_INDEX, prefix: `${account}/` },
      // The a2a delivery step's links to remote tasks and conversations (wake/a2a-links.ts).
      { kind: 'a2a_link', prefix: `${account}|` },
      { kind: 'a2a_conversation', prefix: `${account}|` },
      // The kept answers of its team sends with an idempotency key (team-send.ts).
      { kind: 'team_send', prefix: `${account}|` },
      // What its e-mail sends count against the hourly rate (email-out.ts).
      { kind: EMAIL_REC.rate, prefix: `${account}|` },
      // Contact requests (contact-requests.ts): ids start with one party and name the other
      // second, so the prefix sweeps them for the first and byRecipient for the second.
      ...CONTACT_KINDS.map((kind) => ({ kind, prefix: `${account}|` })),
    ],
    byMessage: BY_MESSAGE,
    byRecipient: [...PER_RECIPIENT, ...CONTACT_KINDS],
  };
}

/** A room keeps nothing of its own beyond its messages' receipts. */
export function roomSweep(): RecordSweep {
  return { owned: [], byMessage: BY_MESSAGE, byRecipient: [] };
}

/** Tells one account from a removed one of the same name (in practice: both would have to be
 *  created in the same millisecond with no mail sent in between). */
export const incarnationOf = (a: AccountRecord): string => `${a.createdAt}.${a.bornSeq}`;

/** Whether this account (not a removed one of the same name) sent the message. */
export function sentBy(account: AccountRecord, m: StoredMessage): boolean {
  return m.fromAccount === account.id && m.seq > account.bornSeq;
}

/** Whether the account of a parked reader is still the one it authenticated as. Removal ends its
 *  waits on this daemon at once; another daemon sharing the store learns of it only here. Each
 *  read starts after it was asked for (never a cached answer), so a reader that saw mail checks an
 *  account record at least as new as that mail; readers woken together share one read. */
export class IncarnationCheck {
  private pending = new Map<string, { resolve(a: AccountRecord | null): void; reject(e: unknown): void }[]>();

  /** Above this many accounts in one turn, one listAccounts instead of a read per account. */
  constructor(
    private store: Pick<Store, 'getAccount' | 'listAccounts'>,
    private bulkOver = 16,
  ) {}

  async same(a: AccountRecord): Promise<boolean> {
    const now = await new Promise<AccountRecord | null>((resolve, reject) => {
      if (this.pending.size === 0) setImmediate(() => void this.flush());
      const list = this.pending.get(a.id) ?? [];
      list.push({ resolve, reject });
      this.pending.set(a.id, list);
    });
    return now !== null && incarnationOf(now) === incarnationOf(a);
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    const settle = (id: string, read: () => Promise<AccountRecord | null>): Promise<void> =>
      read().then(
        (acc) => batch.get(id)?.forEach((w) => w.resolve(acc)),
        (err: unknown) => batch.get(id)?.forEach((w) => w.reject(err)),
      );
    if (batch.size <= this.bulkOver) {
      await Promise.all([...batch.keys()].map((id) => settle(id, () => this.store.getAccount(id))));
      return;
    }
    const all = this.store.listAccounts().then((list) => new Map(list.map((x) => [x.id, x])));
    await Promise.all([...batch.keys()].map((id) => settle(id, async () => (await all).get(id) ?? null)));
  }
}
