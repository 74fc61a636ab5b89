// The relay's state: one mail4agent store (SQLite at DIR/relay.db, or a shared PostgreSQL) holding
// relay users as human accounts with the browser door's login records (engine/web-auth.ts), and
//   relay_node   id = node id   {token_digest, added_at}      sha256 hex of the node's token
//   relay_grant  id = user      {node, mailbox, role}          one grant per user
// No mail is ever posted into it. Everything is read per request, so `m4a relay …` run beside a
// serving relay takes effect at once.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../store/index.js';
import type { Store } from '../store/types.js';
import { systemClock } from '../engine/clock.js';
import { WebAuth } from '../engine/web-auth.js';
import { argon2Hasher } from '../doors/web/argon2-hasher.js';
import { MailError } from '../wire/errors.js';
import { RelayNodeId } from '../wire/relay-link.js';
import { DelegateName } from '../wire/ops.js';
import { Selector } from '../wire/fields.js';

export type RelayRole = 'owner' | 'delegate';
export interface RelayGrant {
  node: string;
  mailbox: string;
  role: RelayRole;
}
export interface RelayNodeRec {
  token_digest: string;
  added_at: number;
}

const K = { node: 'relay_node', grant: 'relay_grant' } as const;
const LIST_MAX = 10_000;

export interface RelayStoreOptions {
  /** Default $M4A_RELAY_DIR, else ~/.local/share/m4a-relay. */
  dataDir?: string | undefined;
  /** A store spec (postgres://…, a .db path); default DIR/relay.db. */
  store?: string | undefined;
}

export function relayDataDir(dir?: string): string {
  const d = dir ?? process.env.M4A_RELAY_DIR ?? join(homedir(), '.local', 'share', 'm4a-relay');
  mkdirSync(d, { recursive: true, mode: 0o700 });
  // A directory someone else made keeps its owner's choice; ours is private.
  if ((statSync(d).mode & 0o077) !== 0 && statSync(d).uid === process.getuid?.()) chmodSync(d, 0o700);
  return d;
}

export const sha256Hex = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

/** Equal digests, in time that does not depend on where they differ. */
export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === 32 && y.length === 32 && timingSafeEqual(x, y);
}

/** A fixed digest compared against when the node is unknown, so both refusals take the same path. */
const DUMMY_DIGEST = sha256Hex(randomBytes(32).toString('base64url'));

export function parseName(kind: 'node' | 'user', value: string): string {
  const r = (kind === 'node' ? RelayNodeId : DelegateName).safeParse(value);
  if (!r.success) throw new MailError('malformed', `not a valid ${kind} name: lower-case letters, digits, . _ - (at most 64)`, { field: kind, reason: 'name' });
  return r.data;
}

export class RelayState {
  readonly auth: WebAuth;

  constructor(readonly store: Store) {
    this.auth = new WebAuth(store, systemClock, argon2Hasher);
  }

  static async open(o: RelayStoreOptions): Promise<RelayState> {
    const dir = relayDataDir(o.dataDir);
    return new RelayState(await openStore(o.store ?? join(dir, 'relay.db')));
  }

  close(): Promise<void> {
    return this.store.close();
  }

  async node(id: string): Promise<RelayNodeRec | null> {
    const row = await this.store.getRecord(K.node, id);
    return row ? (JSON.parse(row.value) as RelayNodeRec) : null;
  }

  /** The node whose stored digest this token matches, or null (unknown node and wrong token alike). */
  async verifyNode(id: string, token: string): Promise<RelayNodeRec | null> {
    const rec = await this.node(id);
    const ok = sameDigest(sha256Hex(token), rec?.token_digest ?? DUMMY_DIGEST);
    return ok && rec ? rec : null;
  }

  /** Adds a node with a fresh token; returns the token (never stored, only its digest). */
  async addNode(id: string): Promise<string> {
    parseName('node', id);
    if (await this.node(id)) throw new MailError('already_exists', `node ${id} exists: remove it first to issue a new token`, { field: 'node' });
    const token = randomBytes(32).toString('base64url');
    const now = Date.now();
    const rec: RelayNodeRec = { token_digest: sha256Hex(token), added_at: now };
    await this.store.putRecord({ kind: K.node, id, value: JSON.stringify(rec), updatedAt: now });
    return token;
  }

  async removeNode(id: string): Promise<void> {
    if (!(await this.store.deleteRecord(K.node, id))) throw new MailError('malformed', `no node ${id}`, { field: 'node', reason: 'unknown node' });
  }

  async listNodes(): Promise<{ id: string; added_at: number }[]> {
    const rows = await this.store.listRecords(K.node, '', LIST_MAX);
    return rows.map((r) => ({ id: r.id, added_at: (JSON.parse(r.value) as RelayNodeRec).added_at }));
  }

  async addUser(name: string, password: string): Promise<void> {
    parseName('user', name);
    const digest = sha256Hex(randomBytes(32).toString('hex')); // no bearer secret: people only log in
    const added = await this.store.addAccount({
      id: name,
      kind: 'human',
      label: name,
      permissions: { send: false, read: false, urgent: false, operator: false },
      bindProvider: null,
      secretDigest: digest,
      createdAt: Date.now(),
    });
    if (added === 'exists') throw new MailError('already_exists', `user ${name} exists`, { field: 'user' });
    await this.auth.setPassword(name, password);
  }

  async user(name: string): Promise<boolean> {
    return (await this.store.getAccount(name))?.kind === 'human';
  }

  async grant(name: string, g: RelayGrant): Promise<void> {
    parseName('node', g.node);
    if (!Selector.safeParse(g.mailbox).success) throw new MailError('malformed', 'not a valid mailbox name', { field: 'mailbox', reason: 'name' });
    if (g.role !== 'owner' && g.role !== 'delegate') throw new MailError('malformed', 'role is owner or delegate', { field: 'role', reason: 'role' });
    if (!(await this.user(name))) throw new MailError('unknown_participant', `no relay user ${name}`, { participant: name });
    const value: RelayGrant = { node: g.node, mailbox: g.mailbox, role: g.role };
    await this.store.putRecord({ kind: K.grant, id: name, value: JSON.stringify(value), updatedAt: Date.now() });
  }

  async grantOf(name: string): Promise<RelayGrant | null> {
    const row = await this.store.getRecord(K.grant, name);
    return row ? (JSON.parse(row.value) as RelayGrant) : null;
  }

  /** Takes the grant away and ends every login of the user. */
  async revoke(name: string): Promise<number> {
    if (!(await this.user(name))) throw new MailError('unknown_participant', `no relay user ${name}`, { participant: name });
    await this.store.deleteRecord(K.grant, name);
    return this.auth.revokeAll(name);
  }

  async listUsers(): Promise<{ user: string; grant: RelayGrant | null }[]> {
    const people = (await this.store.listAccounts()).filter((a) => a.kind === 'human');
    return Promise.all(people.map(async (a) => ({ user: a.id, grant: await this.grantOf(a.id) })));
  }
}
