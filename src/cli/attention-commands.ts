// `m4a attention [dnd|focus|open]`: quiet hours for this session (or the account with
// --for-account). dnd holds every non-urgent wake, focus those of mail not written to you alone,
// open ends it; mail is stored and readable throughout (docs/teams.md "## Quiet hours").
import type { Command } from 'commander';
import type { AttentionOut, AttentionRequest } from '../wire/contacts.js';
import { withDaemon, UsageError, type ConnectOptions } from './connect.js';
import { fail, printJson } from './output.js';
import { parseDuration } from './wake-commands.js';

interface Options extends ConnectOptions {
  json?: boolean;
  until?: string;
  for?: string;
  forAccount?: boolean;
}

const pad = (n: number): string => String(n).padStart(2, '0');

/** A local time as ISO 8601 with this machine's offset (the daemon keeps the instant). */
export function isoLocal(d: Date): string {
  const off = -d.getTimezoneOffset();
  const sign = off >= 0 ? '+' : '-';
  const a = Math.abs(off);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${sign}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

/** HH:MM: that local time today, or tomorrow once it has passed; else an ISO time as given. */
export function parseUntil(text: string, now = new Date()): string {
  const hm = /^(\d{1,2}):(\d{2})$/.exec(text.trim());
  if (hm) {
    const h = Number(hm[1]);
    const m = Number(hm[2]);
    if (h > 23 || m > 59) throw new UsageError(`not a time of day: ${text}`);
    const at = new Date(now);
    at.setHours(h, m, 0, 0);
    if (at.getTime() <= now.getTime()) at.setDate(at.getDate() + 1);
    return isoLocal(at);
  }
  if (Number.isNaN(Date.parse(text))) throw new UsageError(`not a time: ${text} (use HH:MM or an ISO time such as 2026-01-02T18:00:00+01:00)`);
  return text;
}

export function attentionRequest(mode: string | undefined, o: Options, now = new Date()): AttentionRequest {
  if (mode !== undefined && mode !== 'dnd' && mode !== 'focus' && mode !== 'open') throw new UsageError(`not a mode: ${mode} (dnd, focus or open)`);
  if (o.until && o.for) throw new UsageError('give --until or --for, not both');
  if ((o.until || o.for) && (!mode || mode === 'open')) throw new UsageError('--until and --for end dnd or focus');
  const until = o.until ? parseUntil(o.until, now) : o.for ? isoLocal(new Date(now.getTime() + parseDuration(o.for) * 1000)) : undefined;
  return { ...(mode ? { mode } : {}), ...(until ? { until } : {}), ...(o.forAccount ? { account: true } : {}) };
}

const human = (r: AttentionOut): string =>
  r.mode === 'open'
    ? `${r.scope}: open (every wake as usual)${r.held ? `; ${r.held} held wakes being released` : ''}`
    : `${r.scope}: ${r.mode === 'dnd' ? 'do not disturb' : 'focus'} until ${r.until ?? 'open'}; ${r.held} wakes held`;

export function registerAttention(program: Command): void {
  program
    .command('attention')
    .description('quiet hours: dnd holds every non-urgent wake, focus wakes only for mail to you alone, open ends it; no mode shows the current one')
    .argument('[mode]', 'dnd, focus or open')
    .option('--until <time>', 'when it ends: HH:MM (local, today or tomorrow) or an ISO time')
    .option('--for <duration>', 'how long: 90, 30s, 45m, 2h, 1d')
    .option('--for-account', 'the whole account, not only this session')
    .option('--json', 'print the answer as JSON')
    .option('--account <name>', "which account's secret to use")
    .option('--data-dir <dir>', "the daemon's data directory")
    .action(async (mode: string | undefined, o: Options) => {
      try {
        const req = attentionRequest(mode, o);
        const r = await withDaemon(o, (c) => c.attention(req));
        if (o.json) printJson(r);
        else process.stdout.write(`${human(r)}\n`);
      } catch (err) {
        fail(err, !!o.json);
      }
    });
}
