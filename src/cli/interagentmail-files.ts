// Reading InterAgentMail's data directory for `m4a import interagentmail` (as its interagentmail.py
// and iam_service.py write it): mailboxes/<address>/profile.json, inbox|sent|archive/<id>.json (one
// file per message and folder, the same payload in every recipient's inbox and the sender's sent),
// mailboxes/<address>/timers/timer-*.json, teams/<name>.json and chats/<channel>/<date>.json
// (interagentmail-chats.ts). Every file is read and checked before the daemon is asked for
// anything: a damaged one is named and nothing is imported.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { MailError } from '../wire/errors.js';
import { LIMITS } from '../wire/limits.js';
import { neutralise } from '../wire/text.js';
import type { CopyRef, ImportedCopy, ImportedTimer } from '../wire/import-mail.js';
import type { TeamCapability } from '../wire/teams.js';
import { NameBook, type MailPlan, type PlannedAccount, type PlannedTeam } from './import-mail-run.js';
import { TextFitter } from './import-text.js';
import { readInterAgentMailChats } from './interagentmail-chats.js';

const FILE_BYTES = 8 << 20;
const FOLDERS = ['inbox', 'sent', 'archive'] as const;
type Folder = (typeof FOLDERS)[number];
const CAPABILITIES: Record<string, TeamCapability | undefined> = { 'timer.schedule_team': 'timer.schedule_team', 'team.manage_members': 'team.manage_members' };

/** Where InterAgentMail keeps its data when no directory is named (its own default). */
export function defaultInterAgentMailDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.INTERAGENTMAIL_HOME) return env.INTERAGENTMAIL_HOME;
  if (process.platform === 'win32' && env.LOCALAPPDATA) return join(env.LOCALAPPDATA, 'InterAgentMail');
  return join(env.HOME || homedir(), '.local', 'share', 'interagentmail');
}

const bad = (file: string, reason: string): MailError =>
  new MailError('malformed', `${neutralise(file)}: ${neutralise(reason)}; nothing was imported`, { field: 'file', file, reason });

type Json = Record<string, unknown>;

function readJson(file: string): Json {
  const size = statSync(file).size;
  if (size > FILE_BYTES) throw bad(file, `${size} bytes, more than ${FILE_BYTES}`);
  let v: unknown;
  try {
    v = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw bad(file, `not JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad(file, 'not a JSON object');
  return v as Json;
}

const str = (o: Json, k: string, file: string): string => {
  const v = o[k];
  if (typeof v !== 'string' || v === '') throw bad(file, `${k}: not a string`);
  return v;
};
const optStr = (o: Json, k: string, file: string): string | null => {
  const v = o[k];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw bad(file, `${k}: not a string`);
  return v;
};
const names = (o: Json, k: string, file: string): string[] => {
  const v = o[k] ?? [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x === '')) throw bad(file, `${k}: not a list of names`);
  return [...new Set(v as string[])];
};
/** InterAgentMail writes ISO-8601 times with an offset. */
const time = (o: Json, k: string, file: string): number => {
  const s = str(o, k, file);
  const t = Date.parse(s);
  if (!Number.isFinite(t) || t < 0) throw bad(file, `${k}: not a time (${s})`);
  return t;
};

const jsonFiles = (dir: string, prefix = ''): string[] =>
  existsSync(dir)
    ? readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isFile() && e.name.endsWith('.json') && e.name.startsWith(prefix))
        .map((e) => e.name)
        .sort()
    : [];

interface SourceMessage {
  id: string;
  file: string;
  thread: string;
  replyTo: string | null;
  from: string;
  recipients: string[];
  subject: string;
  body: string;
  urgent: boolean;
  createdAt: number;
  /** Where each recipient's copy is, and its read time. */
  copies: Map<string, { folder: Folder; readAt: number | null }>;
}

export function readInterAgentMailDir(dir: string): MailPlan {
  const boxesDir = join(dir, 'mailboxes');
  if (!existsSync(boxesDir)) throw bad(boxesDir, 'no such directory (is this an InterAgentMail data directory?)');
  const fit = new TextFitter('interagentmail');
  const boxes = readdirSync(boxesDir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();

  const profiles = new Map<string, Json>();
  const messages = new Map<string, SourceMessage>();
  const timerFiles: { box: string; file: string }[] = [];
  for (const box of boxes) {
    const p = join(boxesDir, box, 'profile.json');
    profiles.set(box, existsSync(p) ? readJson(p) : {});
    for (const folder of FOLDERS) {
      for (const f of jsonFiles(join(boxesDir, box, folder))) {
        const file = join(boxesDir, box, folder, f);
        const o = readJson(file);
        const id = str(o, 'id', file);
        let m = messages.get(id);
        if (!m) {
          m = {
            id,
            file,
            thread: optStr(o, 'thread', file) ?? `thr-${id}`,
            replyTo: optStr(o, 'reply_to', file),
            from: str(o, 'from', file),
            recipients: [...new Set([...names(o, 'to', file), ...names(o, 'cc', file)])],
            subject: typeof o['subject'] === 'string' ? o['subject'] : '',
            body: typeof o['body'] === 'string' ? o['body'] : '',
            urgent: o['priority'] === 'urgent',
            createdAt: time(o, 'created_at', file),
            copies: new Map(),
          };
          messages.set(id, m);
          const files = o['attachments'];
          // Paths on the source's machine that IAM never copied: mail4agent keeps text only.
          if (Array.isArray(files) && files.length > 0) fit.note(file, `${files.length} attachment${files.length === 1 ? '' : 's'}: not imported (mail4agent keeps no files)`);
        }
        // A recipient's own copy (the sender's sent copy is the same message, not a copy to it).
        if (folder !== 'sent' && m.recipients.includes(box)) {
          const readAt = optStr(o, 'read_at', file);
          m.copies.set(box, { folder, readAt: readAt ? time(o, 'read_at', file) : null });
        }
      }
    }
    for (const f of jsonFiles(join(boxesDir, box, 'timers'), 'timer-')) timerFiles.push({ box, file: join(boxesDir, box, 'timers', f) });
  }

  // Accounts: every mailbox, then every address mail names without one, each in name order.
  const book = new NameBook();
  const accounts: PlannedAccount[] = [];
  const account = (address: string): string => {
    const had = book.get(address);
    if (had !== undefined) return had;
    const id = book.name(address, address);
    const p = profiles.get(address) ?? {};
    const label = typeof p['display_name'] === 'string' && p['display_name'] !== '' ? p['display_name'] : address;
    accounts.push({ id, kind: p['kind'] === 'user' ? 'human' : 'agent', label: fit.line(label, LIMITS.labelBytes, address, 'display_name'), source: address });
    if (id !== address) fit.note(address, `account ${id} (the name ${address} is not one here, or was taken)`);
    return id;
  };
  for (const b of boxes) account(b);
  const ordered = [...messages.values()].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const m of ordered) for (const a of [...[m.from, ...m.recipients]].sort()) account(a);

  // Copies, oldest first: the thread's first message (its first recipient's copy) is the root.
  const roots = new Map<string, SourceMessage>();
  for (const m of ordered) if (!roots.has(m.thread)) roots.set(m.thread, m);
  const copies: ImportedCopy[] = [];
  for (const m of ordered) {
    if (m.recipients.length === 0) {
      fit.note(m.file, 'no recipients: not imported');
      continue;
    }
    const where = m.file;
    const subject = fit.line(m.subject, LIMITS.subjectBytes, where, 'subject');
    const body = fit.body(m.body, where);
    const root = roots.get(m.thread)!;
    const rootRef: CopyRef = { id: root.id, to: account(root.recipients[0]!) };
    const parent = m.replyTo !== null ? messages.get(m.replyTo) : undefined;
    // The sender answered its own copy of the parent when it had one.
    const parentRef: CopyRef | null = parent ? { id: parent.id, to: account(parent.recipients.includes(m.from) ? m.from : parent.recipients[0]!) } : null;
    for (const r of m.recipients) {
      const to = account(r);
      const copy = m.copies.get(r);
      if (!copy) fit.note(where, `no copy in ${r}'s mailbox: imported as handled`);
      // Archived is handled (IAM archives a message once it is handled); read alone is not.
      const acked = !copy ? m.createdAt : copy.folder === 'archive' ? (copy.readAt ?? m.createdAt) : null;
      const isRoot = root === m && to === rootRef.to;
      copies.push({
        id: m.id,
        from: account(m.from),
        to,
        subject,
        body,
        priority: m.urgent ? 'urgent' : 'normal',
        created_at: m.createdAt,
        thread: isRoot ? null : rootRef,
        reply_to: parentRef,
        acked_at: acked,
        origin: `interagentmail:${m.id}`,
      });
    }
  }

  const teamBook = new NameBook();
  const teams: PlannedTeam[] = [];
  const teamNames = new Map<string, string>();
  for (const f of jsonFiles(join(dir, 'teams'))) {
    const file = join(dir, 'teams', f);
    const o = readJson(file);
    const src = str(o, 'name', file);
    const name = teamBook.name(src, src);
    teamNames.set(src, name);
    const members = names(o, 'members', file).map(account);
    const leaders = names(o, 'leaders', file).map(account);
    const grants: PlannedTeam['grants'] = [];
    const raw = o['grants'] ?? [];
    if (!Array.isArray(raw)) throw bad(file, 'grants: not a list');
    for (const g of raw as Json[]) {
      if (typeof g !== 'object' || g === null) throw bad(file, 'grants: not a list of {subject, capability}');
      const subject = str(g, 'subject', file);
      const cap = str(g, 'capability', file);
      const ours = CAPABILITIES[cap];
      if (!ours) fit.note(file, `grant ${cap} to ${subject}: no such capability here, not kept`);
      else if (!leaders.includes(account(subject))) fit.note(file, `grant ${cap} to ${subject}: not a leader, not kept`);
      else grants.push({ leader: account(subject), capability: ours });
    }
    teams.push({ name, members: [...new Set([...members, ...leaders])], leaders, grants });
  }

  const timers: ImportedTimer[] = [];
  for (const { box, file } of timerFiles) {
    const o = readJson(file);
    const status = optStr(o, 'status', file);
    const delivery = (o['delivery'] ?? {}) as Json;
    if ((status !== null && status !== 'scheduled' && status !== 'due') || (typeof delivery === 'object' && delivery !== null && delivery['delivered_at'])) {
      fit.note(file, 'delivered already: not imported');
      continue;
    }
    const auth = (o['authorization'] ?? {}) as Json;
    const team = auth['kind'] === 'team' && typeof auth['team_name'] === 'string' ? teamNames.get(auth['team_name']) : undefined;
    const by = optStr(o, 'created_by', file);
    if (auth['kind'] === 'team' && team === undefined) fit.note(file, 'its team is gone: imported as a reminder of its own');
    timers.push({
      id: str(o, 'id', file),
      account: account(optStr(o, 'target', file) ?? box),
      due: time(o, 'due_at', file),
      note: fit.line(str(o, 'note', file), LIMITS.subjectBytes, file, 'note'),
      created_at: time(o, 'created_at', file),
      ...(team !== undefined && by !== null ? { team, set_by: account(by) } : {}),
    });
  }
  const chats = readInterAgentMailChats(dir, { readJson, str, names, time, jsonFiles, bad }, account, fit, teams, teamNames);
  return { source: 'interagentmail', from: dir, accounts, ...chats, teams, copies, timers, notes: fit.notes };
}
