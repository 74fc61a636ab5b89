// InterAgentMail's chat channels for `m4a import interagentmail`: chats/<channel>/<date>.json, one
// file per channel and day, as its interagentmail.py writes them: {channel, channelType (public or
// private; channel_type in older files), participants, date, messages}, the messages newest first,
// each {agent (a display name), address, timestamp, message, seen_by: {address: time}}. A channel
// becomes a room of its (sanitised) name, or the team's room when a team has that name; its members
// are the participants, the posters and those who saw a post. Each post is a room message from
// its poster at its time, acknowledged for those who saw it. A post has no id in the source: its
// id is derived from the channel, the day, the poster, the time and the text (and which of equal
// ones it is), so a second run finds it.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { MailError } from '../wire/errors.js';
import { LIMITS } from '../wire/limits.js';
import { MAIL_IMPORT_LIMITS } from '../wire/import-limits.js';
import type { ImportedPost } from '../wire/import-mail.js';
import { NameBook, type MailPlan, type PlannedTeam } from './import-mail-run.js';
import { cutBytes, type TextFitter } from './import-text.js';

type Json = Record<string, unknown>;

/** The reader's checked accessors (interagentmail-files.ts): each names the file it refuses. */
export interface JsonReader {
  readJson(file: string): Json;
  str(o: Json, k: string, file: string): string;
  names(o: Json, k: string, file: string): string[];
  time(o: Json, k: string, file: string): number;
  jsonFiles(dir: string): string[];
  bad(file: string, reason: string): MailError;
}

/** A subject for a post (chats have none): its first line, short. */
const SUBJECT_BYTES = 120;
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

export function readInterAgentMailChats(
  dir: string,
  r: JsonReader,
  account: (address: string) => string,
  fit: TextFitter,
  teams: PlannedTeam[],
  teamSources: Map<string, string>,
): Pick<MailPlan, 'rooms' | 'posts'> {
  const chatsDir = join(dir, 'chats');
  if (!existsSync(chatsDir)) return { rooms: [], posts: [] };
  // Team names first: a channel named like a team is that team's channel (InterAgentMail's team
  // reminders say "post in #<team>"); any other channel whose name a team took gets -2.
  const book = new NameBook();
  for (const [src] of teamSources) book.name(`team\n${src}`, src);
  const rooms: NonNullable<MailPlan['rooms']> = [];
  const posts: ImportedPost[] = [];
  const channels = readdirSync(chatsDir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  for (const ch of channels) {
    const members = new Set<string>();
    let open = true;
    const team = teamSources.get(ch);
    const room = team ?? book.name(`chat\n${ch}`, ch);
    if (team === undefined && room !== ch) fit.note(join(chatsDir, ch), `room ${room} (the name ${ch} is not one here, or was taken)`);
    for (const f of r.jsonFiles(join(chatsDir, ch))) {
      const file = join(chatsDir, ch, f);
      const o = r.readJson(file);
      if (o['channel'] !== undefined && o['channel'] !== ch) throw r.bad(file, `channel: ${JSON.stringify(o['channel'])}, not the name of its folder (${ch})`);
      const type = o['channelType'] ?? o['channel_type'] ?? 'public';
      if (type !== 'public' && type !== 'private') throw r.bad(file, `channelType: ${JSON.stringify(type)}, not public or private`);
      if (type === 'private') open = false;
      for (const p of r.names(o, 'participants', file)) members.add(account(p));
      const list = o['messages'] ?? [];
      if (!Array.isArray(list)) throw r.bad(file, 'messages: not a list');
      const seenIds = new Map<string, number>();
      // Newest first in the file: oldest first here, so equal posts are numbered stably as more are added.
      for (const [i, raw] of [...(list as unknown[])].reverse().entries()) {
        if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw r.bad(file, `messages: entry ${list.length - 1 - i} is not an object`);
        const m = raw as Json;
        const address = r.str(m, 'address', file);
        const at = r.time(m, 'timestamp', file);
        const text = m['message'];
        if (typeof text !== 'string') throw r.bad(file, 'message: not a string');
        const seen = m['seen_by'] ?? {};
        if (typeof seen !== 'object' || seen === null || Array.isArray(seen)) throw r.bad(file, 'seen_by: not an object of address: time');
        const from = account(address);
        members.add(from);
        if (Object.keys(seen).length > MAIL_IMPORT_LIMITS.seenBy)
          throw r.bad(file, `seen_by: ${Object.keys(seen).length} readers of one message, at most ${MAIL_IMPORT_LIMITS.seenBy}`);
        const ackedBy = Object.keys(seen as Json)
          .sort()
          .map((a) => ({ account: account(a), at: r.time(seen as Json, a, file) }));
        for (const a of ackedBy) members.add(a.account);
        const key = sha256(`${ch}\n${f}\n${address}\n${String(m['timestamp'])}\n${text}`).slice(0, 32);
        const n = (seenIds.get(key) ?? 0) + 1;
        seenIds.set(key, n);
        const line = (text.split(/\r?\n|\r/)[0] ?? '').trim();
        const short = cutBytes(line, SUBJECT_BYTES);
        posts.push({
          id: `chat:${key}:${n}`,
          room,
          from,
          subject: fit.line(short === line ? line : `${short}…`, LIMITS.subjectBytes, file, 'message'),
          body: fit.body(text, file),
          created_at: at,
          acked_by: [...new Map(ackedBy.map((a) => [a.account, a])).values()],
          // A folder's name may hold what a line of ours may not (a zero-width space): made visible.
          origin: fit.line(`interagentmail:chats/${ch}/${f}`, LIMITS.correlationBytes, file, 'origin'),
        });
      }
    }
    if (team !== undefined) {
      const t = teams.find((x) => x.name === team)!;
      const added = [...members].filter((m) => !t.members.includes(m));
      t.members.push(...added);
      fit.note(join(chatsDir, ch), `posted in the room of team ${team}${added.length ? `; ${added.join(', ')} made ${added.length === 1 ? 'a member' : 'members'}` : ''}`);
    } else rooms.push({ name: room, members: [...members].sort(), open });
  }
  posts.sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { rooms, posts };
}
