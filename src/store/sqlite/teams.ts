// Team roles and contact lists in the SQLite store (migration 9). The roles are columns of the
// membership rows (leader, grants as a sorted JSON array), so a membership's end ends them; the
// changes and contacts have tables of their own. Writes run in the store's transaction (writer.ts);
// the `…In` helpers run inside a transaction the caller already holds.
import type Database from 'better-sqlite3';
import type { TeamCapability } from '../../wire/teams.js';
import type { ContactPolicy } from '../../wire/contacts.js';
import type { ContactRecord, TeamAction, TeamChange, TeamChangeRecord, TeamLeader } from '../types.js';
import type { Stmt } from './statements.js';

interface ChangeRow {
  id: number;
  room: string;
  at: number;
  by_account: string;
  action: string;
  account: string | null;
  capability: string | null;
}

/** No `before`: every id is below it. */
const NO_CURSOR = Number.MAX_SAFE_INTEGER;

const toChange = (r: ChangeRow): TeamChangeRecord => ({
  id: r.id,
  room: r.room,
  at: r.at,
  by: r.by_account,
  action: r.action as TeamAction,
  account: r.account,
  capability: r.capability as TeamCapability | null,
});

export const parseGrants = (json: string): TeamCapability[] => JSON.parse(json) as TeamCapability[];

/** Sorted, so equal sets are equal text in every store. */
export const grantsJson = (grants: Iterable<TeamCapability>): string => JSON.stringify([...new Set(grants)].sort());

export type TeamStatements = ReturnType<typeof prepareTeamStatements>;

export function prepareTeamStatements(db: Database.Database) {
  const p = <R = unknown>(sql: string): Stmt<R> => db.prepare<unknown[], R>(sql);
  return {
    roomTeam: p<{ team: number }>('SELECT team FROM rooms WHERE name = ?'),
    role: p<{ leader: number; grants: string }>('SELECT leader, grants FROM members WHERE room = ? AND account = ?'),
    // Ending leadership revokes the grants in the same update.
    setLeader: p("UPDATE members SET leader = ?, grants = '[]' WHERE room = ? AND account = ?"),
    setGrants: p('UPDATE members SET grants = ? WHERE room = ? AND account = ?'),
    leadersOf: p<{ account: string; grants: string }>('SELECT account, grants FROM members WHERE room = ? AND leader = 1 ORDER BY account'),
    allLeaders: p<{ room: string; account: string; grants: string }>('SELECT room, account, grants FROM members WHERE leader = 1 ORDER BY room, account'),
    insertChange: p('INSERT INTO team_changes (room, at, by_account, action, account, capability) VALUES (?, ?, ?, ?, ?, ?)'),
    changes: p<ChangeRow>('SELECT * FROM team_changes WHERE room = ? AND id < ? ORDER BY id DESC LIMIT ?'),
    deleteChangesOfRoom: p('DELETE FROM team_changes WHERE room = ?'),

    setContactPolicy: p('UPDATE accounts SET contact_policy = ? WHERE id = ?'),
    accountExists: p<{ one: number }>('SELECT 1 AS one FROM accounts WHERE id = ?'),
    insertContact: p('INSERT INTO contacts (account, contact, added_at) VALUES (?, ?, ?) ON CONFLICT (account, contact) DO NOTHING'),
    deleteContact: p('DELETE FROM contacts WHERE account = ? AND contact = ?'),
    listContacts: p<{ contact: string; added_at: number }>('SELECT contact, added_at FROM contacts WHERE account = ? ORDER BY contact'),
    hasContact: p<{ one: number }>('SELECT 1 AS one FROM contacts WHERE account = ? AND contact = ?'),
    deleteContactsOf: p('DELETE FROM contacts WHERE account = ?'),
    deleteContactsNaming: p('DELETE FROM contacts WHERE contact = ?'),
  };
}

export class SqliteTeams {
  constructor(
    private readonly st: TeamStatements,
    /** The store's write transaction, resolved once durable (writer.ts). */
    private readonly tx: <R>(fn: () => R) => Promise<R>,
  ) {}

  // ---- inside the caller's transaction

  recordIn(c: TeamChange): void {
    this.st.insertChange.run(c.room, c.at, c.by, c.action, c.account, c.capability);
  }

  /** A room removed, or a name taken again by a new room: its changes go. */
  forgetRoomIn(room: string): void {
    this.st.deleteChangesOfRoom.run(room);
  }

  /** An account removed, or its name taken again: its list and its place on others' lists go. */
  forgetAccountIn(account: string): void {
    this.st.deleteContactsOf.run(account);
    this.st.deleteContactsNaming.run(account);
  }

  leadersOf(room: string): TeamLeader[] {
    return this.st.leadersOf.all(room).map((r) => ({ account: r.account, grants: parseGrants(r.grants) }));
  }

  /** room -> its leaders, for listRooms. */
  allLeaders(): Map<string, TeamLeader[]> {
    const out = new Map<string, TeamLeader[]>();
    for (const r of this.st.allLeaders.all()) {
      const list = out.get(r.room) ?? [];
      list.push({ account: r.account, grants: parseGrants(r.grants) });
      out.set(r.room, list);
    }
    return out;
  }

  // ---- the Store's operations

  setLeader(room: string, account: string, leader: boolean, change: TeamChange): Promise<'ok' | 'unchanged' | 'no_room' | 'not_team' | 'not_member'> {
    return this.tx(() => {
      const r = this.st.roomTeam.get(room);
      if (!r) return 'no_room';
      if (r.team !== 1) return 'not_team';
      const role = this.st.role.get(room, account);
      if (!role) return 'not_member';
      if ((role.leader === 1) === leader) return 'unchanged';
      this.st.setLeader.run(leader ? 1 : 0, room, account);
      this.recordIn(change);
      return 'ok';
    });
  }

  setGrant(room: string, account: string, capability: TeamCapability, granted: boolean, change: TeamChange): Promise<'ok' | 'unchanged' | 'no_room' | 'not_team' | 'not_leader'> {
    return this.tx(() => {
      const r = this.st.roomTeam.get(room);
      if (!r) return 'no_room';
      if (r.team !== 1) return 'not_team';
      const role = this.st.role.get(room, account);
      if (!role || role.leader !== 1) return 'not_leader';
      const grants = new Set(parseGrants(role.grants));
      if (grants.has(capability) === granted) return 'unchanged';
      if (granted) grants.add(capability);
      else grants.delete(capability);
      this.st.setGrants.run(grantsJson(grants), room, account);
      this.recordIn(change);
      return 'ok';
    });
  }

  async teamChanges(room: string, before: number | null, limit: number): Promise<TeamChangeRecord[]> {
    if (limit <= 0) return [];
    return this.st.changes.all(room, before ?? NO_CURSOR, limit).map(toChange);
  }

  setContactPolicy(account: string, policy: ContactPolicy): Promise<boolean> {
    return this.tx(() => this.st.setContactPolicy.run(policy, account).changes > 0);
  }

  addContact(account: string, contact: string, at: number): Promise<'ok' | 'exists' | 'no_account'> {
    return this.tx(() => {
      if (!this.st.accountExists.get(account) || !this.st.accountExists.get(contact)) return 'no_account';
      return this.st.insertContact.run(account, contact, at).changes > 0 ? 'ok' : 'exists';
    });
  }

  removeContact(account: string, contact: string): Promise<boolean> {
    return this.tx(() => this.st.deleteContact.run(account, contact).changes > 0);
  }

  async listContacts(account: string): Promise<ContactRecord[]> {
    return this.st.listContacts.all(account).map((r) => ({ contact: r.contact, addedAt: r.added_at }));
  }

  async hasContact(account: string, contact: string): Promise<boolean> {
    return this.st.hasContact.get(account, contact) !== undefined;
  }
}
