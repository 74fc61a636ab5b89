// Bearer secrets: stored only as SHA-256 digests, compared in constant time, looked up cheaply.
import { createHash, timingSafeEqual } from 'node:crypto';
import { MailError } from '../wire/errors.js';
import type { AccountRecord, Store } from '../store/types.js';
import type { Clock } from './clock.js';

export function digestSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

const CACHE_MS = 1000;
const CACHE_MAX = 10_000;

/** Resolves a presented secret to its account. A short cache keeps the send path off the store;
 *  admin changes clear it at once in this daemon (other daemons see them within CACHE_MS). */
export class CredentialCheck {
  private cache = new Map<string, { account: AccountRecord; until: number }>();

  constructor(
    private store: Store,
    private clock: Clock,
  ) {}

  async verify(secret: string | undefined): Promise<AccountRecord> {
    if (!secret) throw new MailError('unauthenticated', 'a bearer secret is required (Authorization: Bearer …)');
    const digest = digestSecret(secret);
    const now = this.clock.now();
    const hit = this.cache.get(digest);
    if (hit && hit.until > now) return hit.account;
    const account = await this.store.findAccountByDigest(digest);
    if (!account || !timingSafeEqual(Buffer.from(account.secretDigest, 'hex'), Buffer.from(digest, 'hex'))) {
      throw new MailError('unauthenticated', 'the bearer secret names no account');
    }
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(digest, { account, until: now + CACHE_MS });
    return account;
  }

  clear(): void {
    this.cache.clear();
  }
}
