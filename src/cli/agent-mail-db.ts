// Reading MCP Agent Mail's SQLite database for `m4a import agent-mail DB`: its tables projects,
// agents, messages and message_recipients (read and ack times per recipient). The file is opened
// read-only here, in the CLI, where the file is: the daemon is never handed a path to open, and
// better-sqlite3 (a dependency already, kept out of the CLI bundle) is loaded only by this command.
// Everything is read and checked before the daemon is asked for anything.
import { existsSync } from 'node:fs';
import { MailError } from '../wire/errors.js';
import { LIMITS } from '../wire/limits.js';
import { neutralise } from '../wire/text.js';
import type { CopyRef, ImportedCopy } from '../wire/import-mail.js';
import { NameBook, type MailPlan, type PlannedAccount } from './import-mail-run.js';
import { TextFitter } from './import-text.js';

/** The name Agent Mail's web UI sends a person's messages as. */
export const OVERSEER = 'HumanOverseer';

const bad = (file: string, reason: string): MailError =>
  new MailError('malformed', `${neutralise(file)}: ${neutralise(reason)}; nothing was imported`, { field: 'file', file, reason });

interface ProjectRow {
  id: number;
  slug: string;
}
interface AgentRow {
  id: number;
  project_id: number;
  name: string;
  program: string | null;
  task_description: string | null;
}
interface MessageRow {
  id: number;
  project_id: number;
  sender_id: number;
  thread_id: string | null;
  subject: string | null;
  body_md: string | null;
  importance: string | null;
  ack_required: number | null;
  created_ts: string | number;
  attachments: string | null;
}
interface RecipientRow {
  message_id: number;
  agent_id: number;
  kind: string | null;
  read_ts: string | number | null;
  ack_ts: string | number | null;
}

/** Agent Mail keeps naive UTC datetimes (`2026-01-02 03:04:05.678901`, or with a T). */
export function agentMailTime(v: string | number, file: string, what: string): number {
  if (typeof v === 'number' && Number.isFinite(v)) return Math.round(v > 1e11 ? v : v * 1000);
  const s = String(v)
    .trim()
    .replace(' ', 'T')
    .replace(/(\.\d{3})\d+/, '$1');
  const t = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(s) ? s : `${s}Z`);
  if (!Number.isFinite(t) || t < 0) throw bad(file, `${what}: not a time (${String(v)})`);
  return t;
}

interface Db {
  prepare(sql: string): { all(): unknown[] };
  close(): void;
}

async function open(file: string): Promise<Db> {
  if (!existsSync(file)) throw bad(file, 'no such file');
  const { default: Database } = await import('better-sqlite3');
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    // A file that is not SQLite opens, and fails at its first read.
    db.prepare('SELECT count(*) FROM sqlite_master').all();
    return db;
  } catch (err) {
    throw bad(file, `not an SQLite database (${err instanceof Error ? err.message : String(err)})`);
  }
}

function rows<T>(db: Db, file: string, table: string, sql: string): T[] {
  try {
    return db.prepare(sql).all() as T[];
  } catch (err) {
    throw bad(file, `table ${table}: ${err instanceof Error ? err.message : String(err)} (is this MCP Agent Mail's database?)`);
  }
}

export async function readAgentMailDb(file: string): Promise<MailPlan> {
  const db = await open(file);
  let projects: ProjectRow[], agents: AgentRow[], messages: MessageRow[], recipients: RecipientRow[];
  try {
    projects = rows(db, file, 'projects', 'SELECT id, slug FROM projects ORDER BY id');
    agents = rows(db, file, 'agents', 'SELECT id, project_id, name, program, task_description FROM agents ORDER BY id');
    messages = rows(
      db,
      file,
      'messages',
      'SELECT id, project_id, sender_id, thread_id, subject, body_md, importance, ack_required, created_ts, attachments FROM messages ORDER BY created_ts, id',
    );
    recipients = rows(db, file, 'message_recipients', 'SELECT message_id, agent_id, kind, read_ts, ack_ts FROM message_recipients ORDER BY message_id, agent_id');
  } finally {
    db.close();
  }
  const fit = new TextFitter('agent-mail');

  // Agents in the order Agent Mail registered them: the first of a name keeps it.
  const book = new NameBook();
  const accounts: PlannedAccount[] = [];
  const accountOf = new Map<number, string>();
  const projectOf = new Map(projects.map((p) => [p.id, p]));
  for (const a of agents) {
    if (typeof a.name !== 'string' || a.name === '') throw bad(file, `agents ${a.id}: no name`);
    const p = projectOf.get(a.project_id);
    if (!p) throw bad(file, `agents ${a.id}: project ${a.project_id} is not in projects`);
    const id = book.name(`${a.project_id}:${a.name}`, a.name);
    accountOf.set(a.id, id);
    const label = fit.line(a.task_description ? `${a.name}: ${a.task_description}` : a.name, LIMITS.labelBytes, `agents ${a.id}`, 'label');
    accounts.push({ id, kind: a.name === OVERSEER ? 'human' : 'agent', label, source: `${p.slug}/${a.name}` });
    if (id !== a.name) fit.note(`agents ${a.id}`, `${p.slug}/${a.name} is account ${id}`);
  }

  // Projects as rooms of their agents: a project's agents keep a group to write to.
  const roomBook = new NameBook();
  const rooms = projects.map((p) => ({ name: roomBook.name(String(p.id), p.slug), members: agents.filter((a) => a.project_id === p.id).map((a) => accountOf.get(a.id)!) }));

  const byMessage = new Map<number, RecipientRow[]>();
  for (const r of recipients) {
    if (!accountOf.has(r.agent_id)) throw bad(file, `message_recipients ${r.message_id}: agent ${r.agent_id} is not in agents`);
    const list = byMessage.get(r.message_id) ?? [];
    list.push(r);
    byMessage.set(r.message_id, list);
  }

  // A thread is its thread_id, or a message's own id (as Agent Mail's replies name it).
  const key = (m: MessageRow): string => `${m.project_id}\n${m.thread_id ?? String(m.id)}`;
  const roots = new Map<string, CopyRef>();
  for (const m of messages) {
    const first = byMessage.get(m.id)?.[0];
    if (first && !roots.has(key(m))) roots.set(key(m), { id: String(m.id), to: accountOf.get(first.agent_id)! });
  }
  // A thread named by a message id has that message as its root, whenever it was stored.
  for (const m of messages) {
    const first = byMessage.get(m.id)?.[0];
    if (first) roots.set(`${m.project_id}\n${String(m.id)}`, { id: String(m.id), to: accountOf.get(first.agent_id)! });
  }

  const copies: ImportedCopy[] = [];
  for (const m of messages) {
    const where = `messages ${m.id}`;
    const from = accountOf.get(m.sender_id);
    if (from === undefined) throw bad(file, `${where}: sender ${m.sender_id} is not in agents`);
    const list = byMessage.get(m.id) ?? [];
    if (!list.length) {
      fit.note(where, 'no recipients: not imported');
      continue;
    }
    const created = agentMailTime(m.created_ts, file, `${where} created_ts`);
    const subject = fit.line(m.subject ?? '', LIMITS.subjectBytes, where, 'subject');
    const body = fit.body(m.body_md ?? '', where);
    if (m.attachments && m.attachments !== '[]') fit.note(where, 'attachments are not imported');
    const root = roots.get(key(m))!;
    const project = projectOf.get(m.project_id)?.slug ?? String(m.project_id);
    // Its own urgent_only filter counts high as urgent: so does this import.
    const urgent = m.importance === 'urgent' || m.importance === 'high';
    for (const r of list) {
      const to = accountOf.get(r.agent_id)!;
      // Acknowledged is handled; read is handled too when no acknowledgement was asked for.
      const ackAt = r.ack_ts !== null ? r.ack_ts : !m.ack_required && r.read_ts !== null ? r.read_ts : null;
      const self = root.id === String(m.id) && root.to === to;
      copies.push({
        id: String(m.id),
        from,
        to,
        subject,
        body,
        priority: urgent ? 'urgent' : 'normal',
        created_at: created,
        thread: self ? null : root,
        reply_to: null,
        acked_at: ackAt === null ? null : agentMailTime(ackAt, file, `${where} ack/read time`),
        origin: `agent-mail:${project}#${m.id}`,
      });
    }
  }
  return { source: 'agent-mail', from: file, accounts, rooms, teams: [], copies, timers: [], notes: fit.notes };
}
