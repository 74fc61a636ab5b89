// Webhook signatures: `M4A-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(key, "<t>.<raw body>")>`.
// The key is the text of the key file as shown once by `m4a wake set` (its UTF-8 bytes are the HMAC
// key); it lives in the data directory with mode 0600.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, closeSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** In the daemon's data directory. */
export const WEBHOOK_KEY_FILE = 'webhook-signing.key';
export const SIGNATURE_HEADER = 'M4A-Signature';
export const EVENT_ID_HEADER = 'M4A-Event-Id';
/** Receivers should refuse signatures older (or newer) than this. */
export const DEFAULT_TOLERANCE_SECS = 300;

const KEY_PREFIX = 'm4a_whsec_';

/** The data directory's signing key, created on first use (32 random bytes, file mode 0600).
 *  `created` is true only for the call that made it: `m4a wake set` shows the key then, never again. */
export function ensureSigningKey(dataDir: string): { key: string; created: boolean } {
  const path = join(dataDir, WEBHOOK_KEY_FILE);
  const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  let fd: number;
  try {
    // wx: exclusive, so two racing callers agree on one key; 0600 from the first byte.
    fd = openSync(path, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    return { key: readSigningKey(dataDir), created: false };
  }
  try {
    writeSync(fd, `${key}\n`);
  } finally {
    closeSync(fd);
  }
  return { key, created: true };
}

/** Reads the existing key (tightening the file to 0600 if someone loosened it). */
export function readSigningKey(dataDir: string): string {
  const path = join(dataDir, WEBHOOK_KEY_FILE);
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  const key = readFileSync(path, 'utf8').trim();
  if (!key.startsWith(KEY_PREFIX) || key.length < KEY_PREFIX.length + 43) throw new Error(`${path} does not hold a mail4agent webhook signing key`);
  return key;
}

/** Reads the key when first needed and keeps it: for a WebhookOutbox started before the key exists
 *  (the daemon must not create it at start, or `m4a wake set` could never show it). */
export function signingKeyLoader(dataDir: string): () => string {
  let key: string | null = null;
  return () => (key ??= readSigningKey(dataDir));
}

/** What a signed POST is for. Each purpose but the wake webhook's signs with its own key, derived
 *  from the data directory's key, so a body signed for one purpose never verifies as another (an
 *  A2A push, whose URL any local account may choose, can never pass as a wake). */
export type SignPurpose = 'wake' | 'a2a-push';

/** The key of `purpose`: the key itself for wakes, else hex(HMAC-SHA256(key, purpose)). */
export function purposeKey(key: string, purpose: SignPurpose): string {
  return purpose === 'wake' ? key : createHmac('sha256', key).update(purpose).digest('hex');
}

const hmacHex = (key: string, t: number, body: string | Buffer): string => createHmac('sha256', key).update(`${t}.`).update(body).digest('hex');

/** The M4A-Signature header value for `body` sent at unix time `t` (seconds). */
export function signWebhook(key: string, body: string | Buffer, t: number): string {
  return `t=${t},v1=${hmacHex(key, t, body)}`;
}

export type VerifyResult = { ok: true; t: number } | { ok: false; reason: string };

/** What a receiver does: parse `t` and every `v1`, refuse a `t` outside the tolerance, compare the
 *  HMAC of "<t>.<raw body>" in constant time. `body` must be the raw bytes as received. */
export function verifyWebhookSignature(o: {
  key: string;
  header: string | null | undefined;
  body: string | Buffer;
  /** ms since the epoch (default Date.now()). */
  now?: number;
  toleranceSecs?: number;
}): VerifyResult {
  if (!o.header) return { ok: false, reason: 'no signature header' };
  let t: number | null = null;
  const sigs: string[] = [];
  for (const part of o.header.split(',')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    const k = part.slice(0, eq).trim();
    const v = part.slice(eq + 1).trim();
    if (k === 't' && /^\d{1,12}$/.test(v)) t = Number(v);
    else if (k === 'v1' && /^[0-9a-f]{64}$/i.test(v)) sigs.push(v.toLowerCase());
  }
  if (t === null) return { ok: false, reason: 'no timestamp' };
  if (sigs.length === 0) return { ok: false, reason: 'no v1 signature' };
  const nowSecs = Math.floor((o.now ?? Date.now()) / 1000);
  if (Math.abs(nowSecs - t) > (o.toleranceSecs ?? DEFAULT_TOLERANCE_SECS)) return { ok: false, reason: 'timestamp outside the tolerance' };
  const expected = Buffer.from(hmacHex(o.key, t, o.body), 'hex');
  // Every candidate is compared (no early exit), each in constant time.
  let match = false;
  for (const s of sigs) match = timingSafeEqual(expected, Buffer.from(s, 'hex')) || match;
  return match ? { ok: true, t } : { ok: false, reason: 'signature mismatch' };
}
