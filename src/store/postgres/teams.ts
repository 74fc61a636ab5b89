// Team roles and contact lists in the PostgreSQL store (migration 9), as sqlite/teams.ts. Roles are
// columns of the membership rows. Every write that reads a role before changing it runs under the
// registry lock, which every membership change takes too (locks.ts): a grant can never land on a
// leadership another daemon just ended, nor a leader be marked on a membership just removed.
import type { TeamCapability } from '../../wire/teams.js';
import type { ContactPolicy } from '../../wire/contacts.js';
import type { ContactRecord, TeamAction, TeamChange, TeamChangeRecord, TeamLeader } from '../types.js';
import { grantsJson, parseGrants } from '../sqlite/teams.js';
import { lockRegistry } from './locks.js';
import type { Q, Sql } from './pg-sql.js';

interface ChangeRow {
  id: number;
  room: string;
  at: number;
  by_account: string;
  action: string;
  account: string | null;
  capability: string | null;
}

const toChange = (r: ChangeRow): TeamChangeRecord => ({
  id: r.id,
  room: r.room,
  at: r.at,
  by: r.by_account,
  action: r.action as TeamAction,
  account: r.account,
  capability: r.capability as TeamCapability | null,
});

/** Records a change inside the caller's transaction. */
export async function recordTeamChange(tx: Q, c: TeamChange): Promise<void> {
  await tx`INSERT INTO team_changes (room, at, by_account, action, account, capability)
    VALUES (${c.room}, ${c.at}, ${c.by}, ${c.action}, ${c.account}, ${c.capability})`;
}

/** A room removed, or its name taken by a new room: its changes go (caller's transaction). */
export async function forgetRoomChanges(tx: Q, room: string): Promise<void> {
  await tx`DELETE FROM team_changes WHERE room = ${room}`;
}

/** An account removed, or its name taken again: its list and its place on others' lists go. */
export async function forgetAccountContacts(tx: Q, account: string): Promise<void> {
  await tx`DELETE FROM contacts WHERE account = ${account}`;
  await tx`DELETE FROM contacts WHERE contact = ${account}`;
}

export async function leadersOf(q: Q, room: string): Promise<TeamLeader[]> {
  const rows = await q<{ account: string; grants: string }[]>`SELECT account, grants FROM members WHERE room = ${room} AND leader = 1 ORDER BY account`;
  return rows.map((r) => ({ account: r.account, grants: parseGrants(r.grants) }));
}

/** room -> its leaders, for listRooms. */
export async function allLeaders(q: Q): Promise<Map<string, TeamLeader[]>> {
  const out = new Map<string, TeamLeader[]>();
  for (const r of await q<{ room: string; account: string; grants: string }[]>`SELECT room, account, grants FROM members WHERE leader = 1 ORDER BY room, account`) {
    const list = out.get(r.room) ?? [];
    list.push({ account: r.account, grants: parseGrants(r.grants) });
    out.set(r.room, list);
  }
  return out;
}

export class PgTeams {
  constructor(private readonly sql: Sql) {}

  async setLeader(room: string, account: string, leader: boolean, change: TeamChange): Promise<'ok' | 'unchanged' | 'no_room' | 'not_team' | 'not_member'> {
    return this.sql.begin(async (tx) => {
      await lockRegistry(tx);
      const [r] = await tx<{ team: number }[]>`SELECT team FROM rooms WHERE name = ${room}`;
      if (!r) return 'no_room' as const;
      if (r.team !== 1) return 'not_team' as const;
      const [m] = await tx<{ leader: number }[]>`SELECT leader FROM members WHERE room = ${room} AND account = ${account}`;
      if (!m) return 'not_member' as const;
      if ((m.leader === 1) === leader) return 'unchanged' as const;
      // Ending leadership revokes the grants in the same update.
      await tx`UPDATE members SET leader = ${leader ? 1 : 0}, grants = '[]' WHERE room = ${room} AND account = ${account}`;
      await recordTeamChange(tx, change);
      return 'ok' as const;
    });
  }

  async setGrant(
    room: string,
    account: string,
    capability: TeamCapability,
    granted: boolean,
    change: TeamChange,
  ): Promise<'ok' | 'unchanged' | 'no_room' | 'not_team' | 'not_leader'> {
    return this.sql.begin(async (tx) => {
      await lockRegistry(tx);
      const [r] = await tx<{ team: number }[]>`SELECT team FROM rooms WHERE name = ${room}`;
      if (!r) return 'no_room' as const;
      if (r.team !== 1) return 'not_team' as const;
      const [m] = await tx<{ leader: number; grants: string }[]>`SELECT leader, grants FROM members WHERE room = ${room} AND account = ${account}`;
      if (!m || m.leader !== 1) return 'not_leader' as const;
      const grants = new Set(parseGrants(m.grants));
      if (grants.has(capability) === granted) return 'unchanged' as const;
      if (granted) grants.add(capability);
      else grants.delete(capability);
      // leader = 1 again: belt and braces, the registry lock already keeps the row as read.
      const u = await tx`UPDATE members SET grants = ${grantsJson(grants)} WHERE room = ${room} AND account = ${account} AND leader = 1`;
      if (u.count === 0) return 'not_leader' as const;
      await recordTeamChange(tx, change);
      return 'ok' as const;
    });
  }

  async teamChanges(room: string, before: number | null, limit: number): Promise<TeamChangeRecord[]> {
    if (limit <= 0) return [];
    const rows =
      before === null
        ? await this.sql<ChangeRow[]>`SELECT * FROM team_changes WHERE room = ${room} ORDER BY id DESC LIMIT ${limit}`
        : await this.sql<ChangeRow[]>`SELECT * FROM team_changes WHERE room = ${room} AND id < ${before} ORDER BY id DESC LIMIT ${limit}`;
    return rows.map(toChange);
  }

  async setContactPolicy(account: string, policy: ContactPolicy): Promise<boolean> {
    return (await this.sql`UPDATE accounts SET contact_policy = ${policy} WHERE id = ${account}`).count > 0;
  }

  async addContact(account: string, contact: string, at: number): Promise<'ok' | 'exists' | 'no_account'> {
    return this.sql.begin(async (tx) => {
      // FOR SHARE holds both accounts until this commits: a removal of either waits, then deletes
      // the new row with the rest; a removal that came first leaves the account missing here.
      const rows = await tx`SELECT id FROM accounts WHERE id = ${account} OR id = ${contact} ORDER BY id FOR SHARE`;
      if (rows.length < (account === contact ? 1 : 2)) return 'no_account' as const;
      const ins = await tx`INSERT INTO contacts (account, contact, added_at) VALUES (${account}, ${contact}, ${at})
        ON CONFLICT (account, contact) DO NOTHING RETURNING account`;
      return ins.length > 0 ? ('ok' as const) : ('exists' as const);
    });
  }

  async removeContact(account: string, contact: string): Promise<boolean> {
    return (await this.sql`DELETE FROM contacts WHERE account = ${account} AND contact = ${contact}`).count > 0;
  }

  async listContacts(account: string): Promise<ContactRecord[]> {
    const rows = await this.sql<{ contact: string; added_at: number }[]>`SELECT contact, added_at FROM contacts WHERE account = ${account} ORDER BY contact`;
    return rows.map((r) => ({ contact: r.contact, addedAt: r.added_at }));
  }

  async hasContact(account: string, contact: string): Promise<boolean> {
    return (await this.sql`SELECT 1 FROM contacts WHERE account = ${account} AND contact = ${contact}`).length > 0;
  }
}
