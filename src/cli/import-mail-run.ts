// The half of `m4a import interagentmail|agent-mail` both share, once a reader (interagentmail-
// files.ts, agent-mail-db.ts) has turned the source into a plan in our terms: the accounts, rooms
// and teams are made through the ordinary admin operations (each skipped when it is there already),
// then the copies and timers go to the daemon in requests of at most MAIL_IMPORT_LIMITS, each
// idempotent. Names: the source's names become account selectors by `NameBook`, the same way on
// every run, so a second run finds what the first made.
import { neutralise, selectorProblem, utf8Bytes } from '../wire/text.js';
import { MailError } from '../wire/errors.js';
import { MAIL_IMPORT_LIMITS } from '../wire/import-limits.js';
import type { ImportedCopy, ImportedPost, ImportedTimer, ImportMailRequest, ImportMailResponse, MailImportSource } from '../wire/import-mail.js';
import type { TeamCapability } from '../wire/teams.js';
import type { MailClient } from '../client/http-client.js';
import { readCredentials, writeCredentials } from './credentials.js';
import { table } from './output.js';

/** Names this mailbox keeps for itself: a source's `operator` or `mailbox` becomes `operator-2`. */
const RESERVED = new Set(['operator', 'mailbox']);

/** A source name as a selector: letters, digits and . _ @ + - kept, anything else a `-`. */
export function selectorOf(raw: string): string {
  let s = raw
    .normalize('NFKC')
    .replace(/[^A-Za-z0-9._@+-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[-.]+/, '')
    .replace(/-+$/, '');
  while (utf8Bytes(s) > 100) s = s.slice(0, -1);
  return s === '' ? 'x' : s;
}

/** Source names to selectors, deterministically: the names are taken in the order given (the
 *  readers give a stable one), and a selector met again gets -2, -3 … */
export class NameBook {
  private bySource = new Map<string, string>();
  private taken = new Set<string>(RESERVED);

  name(key: string, raw: string): string {
    const had = this.bySource.get(key);
    if (had !== undefined) return had;
    const base = selectorOf(raw);
    let s = base;
    for (let n = 2; this.taken.has(s.toLowerCase()) || selectorProblem(s); n++) s = `${base}-${n}`;
    this.taken.add(s.toLowerCase());
    this.bySource.set(key, s);
    return s;
  }

  get(key: string): string | undefined {
    return this.bySource.get(key);
  }
}

export interface PlannedAccount {
  id: string;
  kind: 'agent' | 'human';
  label: string;
  /** Where it came from, as the source names it. */
  source: string;
}
export interface PlannedTeam {
  name: string;
  members: string[];
  leaders: string[];
  grants: { leader: string; capability: TeamCapability }[];
}
export interface Note {
  where: string;
  what: string;
}

export interface MailPlan {
  source: MailImportSource;
  from: string;
  accounts: PlannedAccount[];
  /** Rooms with their members (agent-mail projects, InterAgentMail chats; open: anyone may post). */
  rooms: { name: string; members: string[]; open?: boolean }[];
  teams: PlannedTeam[];
  copies: ImportedCopy[];
  timers: ImportedTimer[];
  /** Room posts (InterAgentMail chats), oldest first. */
  posts?: ImportedPost[];
  /** What was changed or left out to fit our rules, shown after the import. */
  notes: Note[];
}

export interface MailImportResult extends ImportMailResponse {
  source: MailImportSource;
  from: string;
  accounts: { id: string; kind: string; source: string; created: boolean }[];
  rooms: { name: string; created: boolean }[];
  teams: { name: string; created: boolean }[];
  requests: number;
  notes: Note[];
}

const REQUEST_BUDGET = 768 * 1024;
const size = (v: unknown): number => Buffer.byteLength(JSON.stringify(v), 'utf8');

/** Copies oldest first (a root or parent before what refers to it), then posts, timers after. */
export function packMailRequests(plan: Pick<MailPlan, 'copies' | 'timers' | 'posts'>, budget = REQUEST_BUDGET): ImportMailRequest[] {
  const out: ImportMailRequest[] = [];
  const empty = (): ImportMailRequest => ({ messages: [], timers: [], ...(plan.posts?.length ? { posts: [] } : {}) });
  let cur = empty();
  let bytes = 0;
  const flush = (): void => {
    out.push(cur);
    cur = empty();
    bytes = 0;
  };
  for (const m of plan.copies) {
    if (cur.messages.length >= MAIL_IMPORT_LIMITS.messages || (cur.messages.length > 0 && bytes + size(m) > budget)) flush();
    cur.messages.push(m);
    bytes += size(m);
  }
  for (const p of plan.posts ?? []) {
    const posts = cur.posts?.length ?? 0;
    if (posts >= MAIL_IMPORT_LIMITS.messages || (cur.messages.length + posts > 0 && bytes + size(p) > budget)) flush();
    cur.posts?.push(p);
    bytes += size(p);
  }
  const items = (): number => cur.messages.length + cur.timers.length + (cur.posts?.length ?? 0);
  for (const t of plan.timers) {
    if (cur.timers.length >= MAIL_IMPORT_LIMITS.timers || (items() > 0 && bytes + size(t) > budget)) flush();
    cur.timers.push(t);
    bytes += size(t);
  }
  if (items() || out.length === 0) flush();
  return out;
}

const exists = (err: unknown): boolean => err instanceof MailError && err.code === 'already_exists';

export async function runMailImport(c: MailClient, plan: MailPlan, provider?: string): Promise<MailImportResult> {
  // Before anything is written: a room of the name that is every account's, or open where the
  // source's group was private, would show the imported mail to people it was never for.
  const present = new Map((await c.admin.roomList()).rooms.map((r) => [r.name, r]));
  for (const r of plan.rooms) {
    const there = present.get(r.name);
    if (there && (there.everyone || (there.open && !r.open)))
      throw new MailError(
        'malformed',
        `room ${r.name} exists here and is ${there.everyone ? "every account's" : 'open'}, but the source's ${r.name} is private: rename or remove that room first; nothing was imported`,
        { field: 'room', reason: 'room_exists', room: r.name },
      );
  }
  const accounts: MailImportResult['accounts'] = [];
  const creds = readCredentials();
  let newSecrets = false;
  for (const a of plan.accounts) {
    try {
      // An account of the name made earlier (by a first run, or by hand) is the same participant.
      const { secret } = await c.admin.accountAdd({ id: a.id, kind: a.kind, label: a.label });
      // Kept where `m4a` finds an account's secret, as `m4a setup` keeps it: an agent switching over uses it.
      creds.accounts[a.id] = { secret, ...(provider && a.kind === 'agent' ? { provider } : {}) };
      newSecrets = true;
      accounts.push({ id: a.id, kind: a.kind, source: a.source, created: true });
    } catch (err) {
      if (!exists(err)) throw err;
      accounts.push({ id: a.id, kind: a.kind, source: a.source, created: false });
    }
  }
  if (newSecrets) writeCredentials(creds);

  const rooms: MailImportResult['rooms'] = [];
  for (const r of plan.rooms) {
    let created = true;
    try {
      await c.admin.roomAdd(r.name, { open: !!r.open });
    } catch (err) {
      if (!exists(err)) throw err;
      created = false;
    }
    for (const m of r.members) await c.admin.memberAdd(r.name, m);
    rooms.push({ name: r.name, created });
  }

  const teams: MailImportResult['teams'] = [];
  const notes = [...plan.notes];
  for (const t of plan.teams) {
    let created = true;
    try {
      await c.admin.teamCreate({ name: t.name, members: t.members });
    } catch (err) {
      if (!exists(err)) throw err;
      created = false;
      try {
        // There already: a team made by an earlier run gets what it lacks (each add holds when done).
        for (const m of t.members) await c.admin.teamMemberAdd(t.name, m);
      } catch (e) {
        if (!(e instanceof MailError && e.code === 'unknown_team')) throw e;
        notes.push({ where: `team ${t.name}`, what: 'a room of that name exists and is no team: left as it is, the team not made' });
        continue;
      }
    }
    for (const l of t.leaders) await c.admin.teamLeaderAdd(t.name, l);
    for (const g of t.grants) await c.admin.teamGrant({ team: t.name, leader: g.leader, capability: g.capability });
    teams.push({ name: t.name, created });
  }

  const requests = packMailRequests(plan);
  const sum: ImportMailResponse = { messages_created: 0, messages_existing: 0, acknowledged: 0, timers_created: 0, timers_existing: 0, posts_created: 0, posts_existing: 0 };
  for (const r of requests) {
    const a = plan.source === 'interagentmail' ? await c.admin.importInterAgentMail(r) : await c.admin.importAgentMail(r);
    for (const k of Object.keys(sum) as (keyof ImportMailResponse)[]) sum[k] += a[k];
  }
  return { ...sum, source: plan.source, from: plan.from, accounts, rooms, teams, requests: requests.length, notes };
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Names and notes come from the source's files: shown with control characters as \u escapes. */
export function describeMailImport(r: MailImportResult): string {
  const n = (s: string): string => neutralise(s);
  const made = (xs: { created: boolean }[]): number => xs.filter((x) => x.created).length;
  const lines = [
    `imported ${n(r.from)} (${r.source}): ${plural(r.accounts.length, 'account')} (${made(r.accounts)} new), ` +
      `${plural(r.messages_created, 'new message')} (${r.messages_existing} imported before), ${r.acknowledged} acknowledged, ` +
      `${plural(r.timers_created, 'new timer')} (${r.timers_existing} imported before)` +
      (r.posts_created + r.posts_existing ? `, ${plural(r.posts_created, 'new room post')} (${r.posts_existing} imported before)` : '') +
      (r.rooms.length ? `, ${plural(r.rooms.length, 'room')} (${made(r.rooms)} new)` : '') +
      (r.teams.length ? `, ${plural(r.teams.length, 'team')} (${made(r.teams)} new)` : ''),
  ];
  if (r.accounts.length) lines.push(table(r.accounts.map((a) => [n(a.id), a.kind, n(a.source), a.created ? 'new' : ''])));
  for (const x of r.notes) lines.push(`${n(x.where)}: ${n(x.what)}`);
  if (made(r.accounts)) lines.push("The new accounts' secrets are in the credentials file: `m4a --account NAME …` (or M4A_ACCOUNT=NAME) acts as one.");
  return lines.join('\n');
}
