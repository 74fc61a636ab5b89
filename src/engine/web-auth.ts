// People log in with a password (human accounts only). Everything lives in store records, so it
// works on every store and across several daemons sharing one:
//   web_password     id = account                  {hash, sessions_since}   argon2id, never the password
//   web_session      id = SHA-256(cookie value)    {account, csrf, created_at, last_seen}
//   web_session_of   id = account/SHA-256(cookie)  {}   (an index, so "revoke all" finds them)
// Neither the cookie value nor the CSRF token is stored, only their digests: reading the store does
// not let anyone into a login. `sessions_since` ends every older login at once (revoke all, new
// password) even if an index record is missed.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { MailError } from '../wire/errors.js';
import type { AccountRecord, Store } from '../store/types.js';
import type { Clock } from './clock.js';
import { DEFAULT_THROTTLE, LoginThrottle, type ClearResult, type ThrottleOptions, type ThrottleView } from './login-throttle.js';

/** argon2id lives outside the engine (a native module); the daemon injects it. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(hash: string, password: string): Promise<boolean>;
}

export interface WebAuthOptions {
  /** A login unused this long ends. */
  idleMs: number;
  /** A login ends this long after it began, used or not. */
  absoluteMs: number;
  throttle: Partial<ThrottleOptions>;
}

export const DEFAULT_WEB_AUTH: WebAuthOptions = { idleMs: 12 * 3600_000, absoluteMs: 7 * 24 * 3600_000, throttle: DEFAULT_THROTTLE };

const K = { password: 'web_password', session: 'web_session', index: 'web_session_of' } as const;
/** lastSeen is written at most this often (a write per request would be waste), and often enough
 *  that an active login never looks idle. */
const TOUCH_EVERY_MS = 60_000;

interface PasswordRec {
  hash: string;
  sessions_since: number;
}
interface SessionRec {
  account: string;
  csrf: string;
  created_at: number;
  last_seen: number;
}

export interface WebLogin {
  account: AccountRecord;
  /** The digest that keys the login's record. */
  id: string;
  createdAt: number;
}

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
const sameDigest = (a: string, b: string): boolean => a.length === b.length && timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
const token = (): string => randomBytes(32).toString('base64url');

export class WebAuth {
  readonly options: WebAuthOptions;
  private throttle: LoginThrottle;
  private dummyHash: Promise<string> | null = null;

  constructor(
    private store: Store,
    private clock: Clock,
    private hasher: PasswordHasher,
    options: Partial<WebAuthOptions> = {},
  ) {
    this.options = { ...DEFAULT_WEB_AUTH, ...options };
    this.throttle = new LoginThrottle(store, clock, this.options.throttle);
  }

  private async human(id: string): Promise<AccountRecord> {
    const acc = await this.store.getAccount(id);
    if (!acc) throw new MailError('unknown_participant', `no account ${id}`, { participant: id });
    if (acc.kind !== 'human')
      throw new MailError('malformed', `${id} is a${acc.kind === 'agent' ? 'n' : ''} ${acc.kind} account; only human accounts log in with a password`, {
        field: 'id',
        reason: 'not a human account',
      });
    return acc;
  }

  /** Sets (or replaces) the password; every earlier login of the account ends. */
  async setPassword(id: string, password: string): Promise<void> {
    await this.human(id);
    const now = this.clock.now();
    const rec: PasswordRec = { hash: await this.hasher.hash(password), sessions_since: now };
    await this.store.putRecord({ kind: K.password, id, value: JSON.stringify(rec), updatedAt: now });
    await this.dropIndexed(id, () => true);
  }

  async hasPassword(id: string): Promise<boolean> {
    return (await this.store.getRecord(K.password, id)) !== null;
  }

  private async passwordOf(id: string): Promise<PasswordRec | null> {
    const row = await this.store.getRecord(K.password, id);
    return row ? (JSON.parse(row.value) as PasswordRec) : null;
  }

  /** Checks the password under the throttle; returns a fresh cookie value and CSRF token. The same
   *  refusal (bad_credentials) for an unknown name, a non-human account and a wrong password, and
   *  about the same time: a missing hash is verified against a dummy one. `address` keys the
   *  throttle: the client's address as the connection shows it (never a header). */
  async login(name: string, password: string, address: string): Promise<{ cookie: string; csrf: string; account: AccountRecord }> {
    const acc = await this.store.getAccount(name);
    return this.throttle.run(name, address, acc !== null, async () => {
      const rec = acc?.kind === 'human' ? await this.passwordOf(name) : null;
      const ok = await this.hasher.verify(rec?.hash ?? (await this.dummy()), password);
      if (!ok || !rec || !acc) return null;
      const now = this.clock.now();
      const cookie = token();
      const csrf = token();
      const id = sha256(cookie);
      const s: SessionRec = { account: acc.id, csrf: sha256(csrf), created_at: now, last_seen: now };
      await this.store.putRecord({ kind: K.index, id: `${acc.id}/${id}`, value: '{}', updatedAt: now });
      await this.store.putRecord({ kind: K.session, id, value: JSON.stringify(s), updatedAt: now });
      await this.dropIndexed(acc.id, (x) => this.expired(x, rec, now)).catch(() => undefined);
      return { cookie, csrf, account: acc };
    });
  }

  /** The wrong passwords tried at a person's own account, for their page. */
  throttleView(login: WebLogin): Promise<ThrottleView> {
    return this.throttle.view(login.account.id);
  }

  /** A logged-in person refills their own account's allowance (someone guessing from many
   *  addresses used it up) and ends the delay of the address they clear from; the guessing
   *  addresses keep theirs. Nobody can clear another account's. */
  clearThrottle(login: WebLogin, address: string): Promise<ClearResult> {
    return this.throttle.clear(login.account.id, address);
  }

  private dummy(): Promise<string> {
    return (this.dummyHash ??= this.hasher.hash(token()));
  }

  private expired(s: SessionRec, p: PasswordRec | null, now: number): boolean {
    return !p || s.created_at < p.sessions_since || now - s.last_seen > this.options.idleMs || now - s.created_at > this.options.absoluteMs;
  }

  /** The login a cookie names, or `unauthenticated`. With `csrf` given (every request but login),
   *  it must be this login's token, else `csrf_failed`. */
  async resolve(cookie: string | undefined, csrf: string | null): Promise<WebLogin> {
    const gone = (): MailError => new MailError('unauthenticated', 'not logged in, or the login ended: log in again');
    if (!cookie) throw gone();
    const id = sha256(cookie);
    const row = await this.store.getRecord(K.session, id);
    if (!row) throw gone();
    const s = JSON.parse(row.value) as SessionRec;
    const now = this.clock.now();
    const [pw, acc] = await Promise.all([this.passwordOf(s.account), this.store.getAccount(s.account)]);
    if (this.expired(s, pw, now) || !acc || acc.kind !== 'human') {
      await this.end(id, s.account);
      throw gone();
    }
    if (csrf !== null && !sameDigest(sha256(csrf), s.csrf)) throw new MailError('csrf_failed', "the request does not carry this login's CSRF token");
    if (now - s.last_seen >= Math.min(TOUCH_EVERY_MS, this.options.idleMs / 4)) {
      s.last_seen = now;
      await this.store.putRecord({ kind: K.session, id, value: JSON.stringify(s), updatedAt: now });
    }
    return { account: acc, id, createdAt: s.created_at };
  }

  /** Log out: this login only. */
  async logout(login: WebLogin): Promise<void> {
    await this.end(login.id, login.account.id);
  }

  /** Ends every login of the account (also those this daemon never saw); returns how many records went. */
  async revokeAll(id: string): Promise<number> {
    await this.human(id);
    const now = this.clock.now();
    const pw = await this.passwordOf(id);
    if (pw) {
      pw.sessions_since = now + 1;
      await this.store.putRecord({ kind: K.password, id, value: JSON.stringify(pw), updatedAt: now });
    }
    return this.dropIndexed(id, () => true);
  }

  private async end(id: string, account: string): Promise<void> {
    await this.store.deleteRecord(K.session, id);
    await this.store.deleteRecord(K.index, `${account}/${id}`);
  }

  private async dropIndexed(account: string, which: (s: SessionRec) => boolean): Promise<number> {
    let n = 0;
    for (const ix of await this.store.listRecords(K.index, `${account}/`, 10_000)) {
      const id = ix.id.slice(account.length + 1);
      const row = await this.store.getRecord(K.session, id);
      if (row && !which(JSON.parse(row.value) as SessionRec)) continue;
      if (row && (await this.store.deleteRecord(K.session, id))) n++;
      await this.store.deleteRecord(K.index, ix.id);
    }
    return n;
  }
}
