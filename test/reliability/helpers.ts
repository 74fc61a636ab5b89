// Small helpers shared by the reliability tests: a raw HTTP call with a deadline and full control
// of Host and body bytes, the error-envelope check, a seeded PRNG, a free port, and a snapshot of the store's state.
import assert from 'node:assert/strict';
import { Agent, request, type ClientRequest, type IncomingMessage } from 'node:http';
import { createServer } from 'node:net';
import { ERROR_TABLE, isErrorCode } from '../../src/wire/errors.js';
import { keyOfLineage, type Store } from '../../src/store/types.js';
import { doorOfPath, tally } from '../support/soak-tally.js';

export interface RawAnswer {
  status: number;
  text: string;
  json: any;
  headers: Record<string, string | string[] | undefined>;
}

/** The door of the last request, where assertUnchanged counts a changed store. */
let lastDoor = 'http';

const keepAlive = new Agent({ keepAlive: true, maxSockets: 4 });

/** Sends one request (`start` makes it, given the answer's handler) with a hard deadline, and
 *  reads its answer; counted in the soak tally's `door` (a 5xx only when `count5xx`, a refused or
 *  reset connection as a crash, the deadline as a hang). Shared by the HTTP and HTTPS helpers. */
export function tallied(
  start: (onAnswer: (res: IncomingMessage) => void) => ClientRequest,
  o: { door: string; path: string; body?: Buffer | undefined; timeoutMs?: number; count5xx?: boolean },
): Promise<RawAnswer> {
  const t = tally((lastDoor = o.door));
  t.requests++;
  const timeoutMs = o.timeoutMs ?? 10_000;
  return new Promise((resolve, reject) => {
    const req = start((res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : null;
        } catch {
          json = text;
        }
        if ((res.statusCode ?? 0) >= 500 && o.count5xx !== false) t.status5xx++;
        resolve({ status: res.statusCode ?? 0, text, json, headers: res.headers });
      });
      res.on('error', reject);
    });
    const timer = setTimeout(() => {
      t.hangs++;
      req.destroy(new Error(`no answer from ${o.path} within ${timeoutMs} ms (a hang)`));
    }, timeoutMs);
    req.on('error', (e) => {
      clearTimeout(timer);
      if (/ECONNREFUSED|ECONNRESET|EPIPE/.test((e as NodeJS.ErrnoException).code ?? '')) t.crashes++;
      reject(e);
    });
    req.end(o.body);
  });
}

/** One HTTP request with a hard deadline: a hang fails the test instead of stalling it. */
export function http(
  url: string,
  path: string,
  o: { method?: string; token?: string; body?: string | Buffer; headers?: Record<string, string>; timeoutMs?: number; fresh?: boolean } = {},
): Promise<RawAnswer> {
  const u = new URL(url);
  const body = o.body === undefined ? undefined : Buffer.isBuffer(o.body) ? o.body : Buffer.from(o.body, 'utf8');
  const start = (onAnswer: (res: IncomingMessage) => void) =>
    request(
      {
        agent: o.fresh ? false : keepAlive,
        host: u.hostname,
        port: u.port,
        path,
        method: o.method ?? 'POST',
        headers: {
          host: u.host,
          'content-type': 'application/json',
          ...(o.token !== undefined ? { authorization: `Bearer ${o.token}` } : {}),
          ...(body !== undefined ? { 'content-length': String(body.length) } : {}),
          ...o.headers,
        },
      },
      onAnswer,
    );
  return tallied(start, { door: doorOfPath(path), path, body, ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}) });
}

/** Asserts a refusal is the documented envelope: a code from ERROR_TABLE with its HTTP status. */
export function assertEnvelope(r: { status: number; json: any; headers?: RawAnswer['headers'] }, where: string): string {
  const e = r.json?.error;
  assert.ok(e && typeof e === 'object', `${where}: HTTP ${r.status} without an error envelope: ${String(JSON.stringify(r.json)).slice(0, 300)}`);
  assert.ok(isErrorCode(e.code), `${where}: unknown error code ${JSON.stringify(e.code)}`);
  assert.notEqual(e.code, 'internal', `${where}: internal error (HTTP ${r.status}): ${JSON.stringify(r.json).slice(0, 300)}`);
  assert.equal(r.status, ERROR_TABLE[e.code as keyof typeof ERROR_TABLE].http, `${where}: ${e.code} came with HTTP ${r.status}`);
  assert.equal(typeof e.message, 'string', `${where}: the envelope has a message`);
  if (r.headers) {
    if (e.code === 'unauthenticated') assert.equal(r.headers['www-authenticate'], 'Bearer', `${where}: 401 without WWW-Authenticate`);
    if (e.code === 'rate_limited') assert.ok(r.headers['retry-after'], `${where}: 429 without Retry-After`);
  }
  return e.code as string;
}

/** A small seeded PRNG (mulberry32): a failing random run replays exactly from its seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Everything a refused request must leave untouched. Registering the caller's session on first
 *  contact happens before a request is read, so sessions new since `before` are left out. */
export interface StoreSnapshot {
  head: number;
  text: string;
  sessionIds: Set<string>;
}

export async function storeSnapshot(store: Store, only?: Set<string>): Promise<StoreSnapshot> {
  const accounts = (await store.listAccounts()).map((a) => ({ ...a }));
  const listeners: Record<string, string | null> = {};
  const contacts: Record<string, string[]> = {};
  for (const a of accounts) {
    listeners[a.id] = await store.getListener(a.id);
    contacts[a.id] = (await store.listContacts(a.id)).map((c) => c.contact);
  }
  const all = await store.listSessions();
  const sessions = only ? all.filter((s) => only.has(`${s.account}/${s.id}`)) : all;
  const unread: Record<string, number> = {};
  for (const s of sessions) {
    unread[`${s.account}/${s.id}`] = await store.unread({ account: s.account, sessionKey: keyOfLineage(s.account, s.lineage), rooms: await store.roomsOf(s.account) });
  }
  const head = await store.headSeq();
  const text = JSON.stringify({
    head,
    accounts,
    listeners,
    contacts,
    rooms: await store.listRooms(),
    names: (await store.listNames()).filter((n) => sessions.some((s) => s.account === n.account && s.lineage === n.lineage)),
    sessions: sessions.map((s) => ({ account: s.account, id: s.id, declared: s.declared, endedAt: s.endedAt, successor: s.successor })),
    unread,
  });
  return { head, text, sessionIds: new Set(all.map((s) => `${s.account}/${s.id}`)) };
}

/** Asserts the store is as `before` left it (a session registered meanwhile aside). */
export async function assertUnchanged(store: Store, before: StoreSnapshot, where: string): Promise<void> {
  // Sessions (and their names) registered meanwhile are left out of the second view.
  const was = before.text;
  const now = await storeSnapshot(store, before.sessionIds);
  if (now.text === was) return;
  tally(lastDoor).changed++;
  const a = JSON.parse(was) as Record<string, unknown>;
  const b = JSON.parse(now.text) as Record<string, unknown>;
  const changed = Object.keys(a).filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
  assert.fail(
    `${where}: a refused request changed the store (${changed.map((k) => `${k}: ${JSON.stringify(a[k]).slice(0, 400)} → ${JSON.stringify(b[k]).slice(0, 400)}`).join('; ')})`,
  );
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
