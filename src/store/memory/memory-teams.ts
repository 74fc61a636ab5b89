// Team roles and contact lists in the memory store. The rooms and accounts stay in memory-store.ts,
// which asks here for a room's leaders and tells this book when a room, membership or account goes.
import type { TeamCapability } from '../../wire/teams.js';
import type { ContactRecord, TeamChange, TeamChangeRecord, TeamLeader } from '../types.js';
import { binaryCompare } from './binary-compare.js';

export class MemoryTeams {
  /** room -> leader -> its grants. Only team rooms have an entry. */
  private readonly leaders = new Map<string, Map<string, Set<TeamCapability>>>();
  /** room -> its changes, oldest first. */
  private readonly changes = new Map<string, TeamChangeRecord[]>();
  /** Global, like the SQL stores' autoincrement: ids never repeat, even for a room made again. */
  private changeId = 0;
  /** account -> contact -> addedAt */
  private readonly contacts = new Map<string, Map<string, number>>();

  // ---- teams

  /** A room was created: a team starts with no leaders, and any room with no changes. */
  roomCreated(room: string, team: boolean): void {
    this.changes.delete(room);
    if (team) this.leaders.set(room, new Map());
    else this.leaders.delete(room);
  }

  roomRemoved(room: string): void {
    this.leaders.delete(room);
    this.changes.delete(room);
  }

  isTeam(room: string): boolean {
    return this.leaders.has(room);
  }

  /** The room's leaders in account order, grants sorted; [] for a plain room. */
  leadersOf(room: string): TeamLeader[] {
    const m = this.leaders.get(room);
    if (!m) return [];
    return [...m].sort(([a], [b]) => binaryCompare(a, b)).map(([account, grants]) => ({ account, grants: [...grants].sort(binaryCompare) }));
  }

  /** A membership ended: so does its leadership, with its grants. */
  memberRemoved(room: string, account: string): void {
    this.leaders.get(room)?.delete(account);
  }

  record(change: TeamChange): void {
    const list = this.changes.get(change.room) ?? [];
    list.push({ ...change, id: ++this.changeId });
    this.changes.set(change.room, list);
  }

  /** The caller has checked that the room exists and that the account is a member. */
  setLeader(room: string, account: string, leader: boolean, change: TeamChange): 'ok' | 'unchanged' | 'not_team' {
    const m = this.leaders.get(room);
    if (!m) return 'not_team';
    if (m.has(account) === leader) return 'unchanged';
    if (leader) m.set(account, new Set());
    else m.delete(account);
    this.record(change);
    return 'ok';
  }

  /** The caller has checked that the room exists. */
  setGrant(room: string, account: string, capability: TeamCapability, granted: boolean, change: TeamChange): 'ok' | 'unchanged' | 'not_team' | 'not_leader' {
    const m = this.leaders.get(room);
    if (!m) return 'not_team';
    const grants = m.get(account);
    if (!grants) return 'not_leader';
    if (grants.has(capability) === granted) return 'unchanged';
    if (granted) grants.add(capability);
    else grants.delete(capability);
    this.record(change);
    return 'ok';
  }

  teamChanges(room: string, before: number | null, limit: number): TeamChangeRecord[] {
    const out: TeamChangeRecord[] = [];
    const list = this.changes.get(room) ?? [];
    for (let i = list.length - 1; i >= 0 && out.length < limit; i--) {
      const c = list[i] as TeamChangeRecord;
      if (before === null || c.id < before) out.push({ ...c });
    }
    return out;
  }

  // ---- contacts

  /** The account is gone (or its name is taken again): its list and its place on others' go. */
  forgetAccount(account: string): void {
    this.contacts.delete(account);
    for (const list of this.contacts.values()) list.delete(account);
  }

  /** The caller has checked that both accounts exist. */
  addContact(account: string, contact: string, at: number): 'ok' | 'exists' {
    const list = this.contacts.get(account) ?? new Map<string, number>();
    if (list.has(contact)) return 'exists';
    list.set(contact, at);
    this.contacts.set(account, list);
    return 'ok';
  }

  removeContact(account: string, contact: string): boolean {
    return this.contacts.get(account)?.delete(contact) ?? false;
  }

  listContacts(account: string): ContactRecord[] {
    return [...(this.contacts.get(account) ?? [])].sort(([a], [b]) => binaryCompare(a, b)).map(([contact, addedAt]) => ({ contact, addedAt }));
  }

  hasContact(account: string, contact: string): boolean {
    return this.contacts.get(account)?.has(contact) ?? false;
  }
}
