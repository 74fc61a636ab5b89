// The registry of the PostgreSQL store: meta, accounts, rooms and their members, listeners, and the
// generic records. Creating or removing a participant empties its keys in the same transaction
// (purge.ts; an account's tasks, tasks.ts; its leases end, leases.ts) under the head lock (locks.ts).
import {
  keyOfAccount,
  keyOfRoom,
  type AccountRecord,
  type NewAccount,
  type RecordRow,
  type RecordSweep,
  type Removal,
  type RoomOptions,
  type RoomRecord,
  type TeamChange,
} from '../types.js';
import { accountParams, toAccount, type AccountRow } from '../sqlite/rows.js';
import { prefixUpperBound } from '../sqlite/prefix.js';
import { endAccountLeases } from './leases.js';
import { lockHead, lockRegistry, memberLock } from './locks.js';
import { pgArray, type Sql, type Tx } from './pg-sql.js';
import { forgetAccount, purgeAccountMail, purgeRoomMail, sweepOwned } from './purge.js';
import { purgeAccountTasks } from './tasks.js';
import { allLeaders, forgetAccountContacts, forgetRoomChanges, leadersOf, recordTeamChange } from './teams.js';

type RoomRow = { name: string; created_at: number; everyone: number; is_open: number; team: number };

interface RecordDbRow {
  kind: string;
  id: string;
  value: string;
  updated_at: string | number;
}

const toRecord = (r: RecordDbRow): RecordRow => ({ kind: r.kind, id: r.id, value: r.value, updatedAt: Number(r.updated_at) });

export class PgRegistry {
  constructor(private readonly sql: Sql) {}

  // ---- meta

  async getMeta(key: string): Promise<string | null> {
    const [r] = await this.sql<{ value: string }[]>`SELECT value FROM meta WHERE key = ${key}`;
    return r?.value ?? null;
  }

  async initMeta(key: string, value: string): Promise<string> {
    await this.sql`INSERT INTO meta (key, value) VALUES (${key}, ${value}) ON CONFLICT (key) DO NOTHING`;
    const [r] = await this.sql<{ value: string }[]>`SELECT value FROM meta WHERE key = ${key}`;
    return (r as { value: string }).value;
  }

  // ---- accounts

  async addAccount(rec: NewAccount, sweep?: RecordSweep): Promise<'ok' | 'exists'> {
    return this.sql.begin(async (tx) => {
      const head = await lockHead(tx);
      const p = accountParams(rec, head);
      const ins = await tx`INSERT INTO accounts ${tx(p)} ON CONFLICT (id) DO NOTHING RETURNING id`;
      if (ins.length === 0) return 'exists' as const;
      await forgetAccount(tx, rec.id, sweep);
      await purgeAccountMail(tx, rec.id, sweep);
      await purgeAccountTasks(tx, rec.id);
      await forgetAccountContacts(tx, rec.id);
      await endAccountLeases(tx, rec.id);
      for (const r of await tx<{ name: string }[]>`SELECT name FROM rooms WHERE everyone = 1 ORDER BY name`) {
        await this.join(tx, r.name, rec.id);
      }
      return 'ok' as const;
    });
  }

  async getAccount(id: string): Promise<AccountRecord | null> {
    const [r] = await this.sql<AccountRow[]>`SELECT * FROM accounts WHERE id = ${id}`;
    return r ? toAccount(r) : null;
  }

  async findAccountByDigest(digest: string): Promise<AccountRecord | null> {
    const [r] = await this.sql<AccountRow[]>`SELECT * FROM accounts WHERE secret_digest = ${digest} LIMIT 1`;
    return r ? toAccount(r) : null;
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return (await this.sql<AccountRow[]>`SELECT * FROM accounts ORDER BY id`).map(toAccount);
  }

  async setAccountSecret(id: string, digest: string): Promise<boolean> {
    return (await this.sql`UPDATE accounts SET secret_digest = ${digest} WHERE id = ${id}`).count > 0;
  }

  async removeAccount(id: string, sweep?: RecordSweep): Promise<Removal | null> {
    return this.sql.begin(async (tx) => {
      await lockHead(tx);
      if ((await tx`DELETE FROM accounts WHERE id = ${id}`).count === 0) return null;
      await tx`DELETE FROM members WHERE account = ${id}`;
      await tx`DELETE FROM listeners WHERE account = ${id}`;
      await tx`DELETE FROM sessions WHERE account = ${id}`;
      await tx`DELETE FROM names WHERE account = ${id}`;
      await forgetAccount(tx, id, sweep);
      await purgeAccountTasks(tx, id);
      await forgetAccountContacts(tx, id);
      await endAccountLeases(tx, id);
      return { messages: await purgeAccountMail(tx, id, sweep) };
    });
  }

  // ---- rooms

  async addRoom(name: string, at: number, opts: RoomOptions = {}): Promise<'ok' | 'exists'> {
    const everyone = opts.everyone ?? false;
    return this.sql.begin(async (tx) => {
      await lockHead(tx);
      const ins = await tx`INSERT INTO rooms (name, created_at, everyone, is_open, team)
        VALUES (${name}, ${at}, ${everyone ? 1 : 0}, ${opts.open ? 1 : 0}, ${opts.team ? 1 : 0})
        ON CONFLICT (name) DO NOTHING RETURNING name`;
      if (ins.length === 0) return 'exists' as const;
      await purgeRoomMail(tx, name);
      await forgetRoomChanges(tx, name);
      if (everyone) for (const a of await tx<{ id: string }[]>`SELECT id FROM accounts ORDER BY id`) await this.join(tx, name, a.id);
      return 'ok' as const;
    });
  }

  async removeRoom(name: string, sweep?: RecordSweep): Promise<Removal | null> {
    return this.sql.begin(async (tx) => {
      await lockHead(tx);
      if ((await tx`DELETE FROM rooms WHERE name = ${name}`).count === 0) return null;
      await tx`DELETE FROM members WHERE room = ${name}`;
      await forgetRoomChanges(tx, name);
      await sweepOwned(tx, sweep);
      return { messages: await purgeRoomMail(tx, name, sweep) };
    });
  }

  async setRoomOpen(name: string, open: boolean): Promise<boolean> {
    return (await this.sql`UPDATE rooms SET is_open = ${open ? 1 : 0} WHERE name = ${name}`).count > 0;
  }

  async getRoom(name: string): Promise<RoomRecord | null> {
    const [r] = await this.sql<RoomRow[]>`SELECT name, created_at, everyone, is_open, team FROM rooms WHERE name = ${name}`;
    if (!r) return null;
    const members = (await this.sql<{ account: string }[]>`SELECT account FROM members WHERE room = ${name} ORDER BY account`).map((m) => m.account);
    const team = r.team === 1;
    return { name: r.name, members, everyone: r.everyone === 1, open: r.is_open === 1, createdAt: r.created_at, team, leaders: team ? await leadersOf(this.sql, name) : [] };
  }

  async listRooms(): Promise<RoomRecord[]> {
    const rooms = new Map<string, RoomRecord>();
    const leaders = await allLeaders(this.sql);
    for (const r of await this.sql<RoomRow[]>`SELECT name, created_at, everyone, is_open, team FROM rooms ORDER BY name`) {
      const team = r.team === 1;
      const room = { name: r.name, members: [], everyone: r.everyone === 1, open: r.is_open === 1, createdAt: r.created_at, team };
      rooms.set(r.name, { ...room, leaders: team ? (leaders.get(r.name) ?? []) : [] });
    }
    for (const m of await this.sql<{ room: string; account: string }[]>`SELECT room, account FROM members ORDER BY room, account`) {
      rooms.get(m.room)?.members.push(m.account);
    }
    return [...rooms.values()];
  }

  async roomsOf(account: string): Promise<string[]> {
    return (await this.sql<{ room: string }[]>`SELECT room FROM members WHERE account = ${account} ORDER BY room`).map((r) => r.room);
  }

  async addMember(room: string, account: string, change?: TeamChange): Promise<'ok' | 'exists' | 'no_room' | 'no_account'> {
    return this.sql.begin(async (tx) => {
      await lockRegistry(tx);
      if ((await tx`SELECT 1 FROM rooms WHERE name = ${room}`).length === 0) return 'no_room' as const;
      if ((await tx`SELECT 1 FROM accounts WHERE id = ${account}`).length === 0) return 'no_account' as const;
      if (!(await this.join(tx, room, account))) return 'exists' as const;
      if (change) await recordTeamChange(tx, change);
      return 'ok' as const;
    });
  }

  /** Makes the account a member (inside the caller's transaction); false if it already is one. */
  private async join(tx: Tx, room: string, account: string): Promise<boolean> {
    if ((await tx`SELECT 1 FROM members WHERE room = ${room} AND account = ${account}`).length > 0) return false;
    await memberLock(tx, room, account, false);
    // A rejoining member keeps the acks it made before: count them once, here.
    const [c] = await tx<{ n: number }[]>`SELECT count(*) AS n FROM acks WHERE ack_key = ${keyOfAccount(account)} AND to_key = ${keyOfRoom(room)}`;
    await tx`INSERT INTO members (room, account, acked) VALUES (${room}, ${account}, ${c?.n ?? 0})`;
    return true;
  }

  /** The row carries the leadership and grants, so they end with it. */
  async removeMember(room: string, account: string, change?: TeamChange): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      await lockRegistry(tx);
      if ((await tx`DELETE FROM members WHERE room = ${room} AND account = ${account}`).count === 0) return false;
      if (change) await recordTeamChange(tx, change);
      return true;
    });
  }

  // ---- listeners

  async setListener(account: string, url: string): Promise<boolean> {
    const r = await this.sql`INSERT INTO listeners (account, url) SELECT id, ${url} FROM accounts WHERE id = ${account}
      ON CONFLICT (account) DO UPDATE SET url = excluded.url RETURNING account`;
    return r.length > 0;
  }

  async removeListener(account: string): Promise<boolean> {
    return (await this.sql`DELETE FROM listeners WHERE account = ${account}`).count > 0;
  }

  async getListener(account: string): Promise<string | null> {
    const [r] = await this.sql<{ url: string }[]>`SELECT url FROM listeners WHERE account = ${account}`;
    return r?.url ?? null;
  }

  async listenersOf(accounts: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (accounts.length === 0) return out;
    const rows = await this.sql<{ account: string; url: string }[]>`SELECT account, url FROM listeners WHERE account = ANY(${pgArray([...new Set(accounts)])}::text[])`;
    for (const r of rows) out.set(r.account, r.url);
    return out;
  }

  // ---- records

  async putRecord(r: RecordRow): Promise<void> {
    await this.sql`INSERT INTO records (kind, id, value, updated_at) VALUES (${r.kind}, ${r.id}, ${r.value}, ${r.updatedAt})
      ON CONFLICT (kind, id) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;
  }

  async insertRecords(rows: RecordRow[]): Promise<string[]> {
    if (rows.length === 0) return [];
    return this.sql.begin(async (tx) => {
      const out: string[] = [];
      for (const r of rows) {
        const ins = await tx`INSERT INTO records (kind, id, value, updated_at) VALUES (${r.kind}, ${r.id}, ${r.value}, ${r.updatedAt})
          ON CONFLICT (kind, id) DO NOTHING RETURNING id`;
        if (ins.length > 0) out.push(r.id);
      }
      return out;
    });
  }

  async getRecord(kind: string, id: string): Promise<RecordRow | null> {
    const [r] = await this.sql<RecordDbRow[]>`SELECT kind, id, value, updated_at FROM records WHERE kind = ${kind} AND id = ${id}`;
    return r ? toRecord(r) : null;
  }

  async listRecords(kind: string, idPrefix: string, limit: number): Promise<RecordRow[]> {
    if (limit <= 0) return [];
    const upper = prefixUpperBound(idPrefix);
    const rows =
      upper === null
        ? await this.sql<RecordDbRow[]>`SELECT kind, id, value, updated_at FROM records WHERE kind = ${kind} AND id >= ${idPrefix} ORDER BY id LIMIT ${limit}`
        : await this.sql<RecordDbRow[]>`SELECT kind, id, value, updated_at FROM records WHERE kind = ${kind} AND id >= ${idPrefix} AND id < ${upper} ORDER BY id LIMIT ${limit}`;
    return rows.map(toRecord);
  }

  async deleteRecord(kind: string, id: string): Promise<boolean> {
    return (await this.sql`DELETE FROM records WHERE kind = ${kind} AND id = ${id}`).count > 0;
  }
}
