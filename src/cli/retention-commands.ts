// m4a admin retention …: how long acknowledged mail is kept per account or room (docs/operations.md
// "Retention"), and a run now.
import type { Command } from 'commander';
import { MailError } from '../wire/errors.js';
import { RECORDS_DAYS_DEFAULT, RECORDS_DAYS_MAX, RECORDS_DAYS_MIN, type RetentionRunOut, type RetentionSetRequest } from '../wire/retention.js';
import { asOperator, operatorCommon as common, type OperatorOptions } from './admin-commands.js';
import { fail, table } from './output.js';

const who = (t: { account?: string | undefined; room?: string | undefined }): string => (t.room !== undefined ? `#${t.room}` : (t.account ?? '?'));

type SetOptions = OperatorOptions & { account?: string; room?: string; days?: string; off?: boolean; recordsDays?: string };

const malformed = (field: string, message: string): MailError => new MailError('malformed', `retention set: ${message}`, { field, reason: message });

/** A number as written; its bounds are the daemon's (wire/retention.ts), refused there by name. */
function days(text: string, field: string, flag: string): number {
  if (!/^-?\d{1,12}(\.\d{1,12})?$/.test(text)) throw malformed(field, `${flag} takes a number of days (not ${JSON.stringify(text)})`);
  return Number(text);
}

/** The request: which flags go together is said here; every bound of a value is the daemon's. */
function setRequest(o: SetOptions): RetentionSetRequest {
  if (o.account !== undefined && o.room !== undefined) throw malformed('account', 'give --account or --room, not both');
  const named = o.account !== undefined || o.room !== undefined;
  if (!named && o.recordsDays === undefined) throw malformed('account', 'give --account or --room (with --days N or --off), or --records-days N');
  if (named && (o.days === undefined) === !o.off) throw malformed('days', 'give --days N or --off');
  if (!named && (o.days !== undefined || o.off)) throw malformed('days', '--days and --off need --account or --room');
  const req: RetentionSetRequest = {};
  if (o.account !== undefined) req.account = o.account;
  if (o.room !== undefined) req.room = o.room;
  if (named) req.days = o.off ? null : days(o.days as string, 'days', '--days');
  if (o.recordsDays !== undefined) req.records_days = days(o.recordsDays, 'records_days', '--records-days');
  return req;
}

const plural = (n: number): string => `${n} day${n === 1 ? '' : 's'}`;

function setLine(r: { account?: string | undefined; room?: string | undefined; days?: number | null | undefined; records_days?: number | undefined }): string {
  const lines: string[] = [];
  if (r.days !== undefined) lines.push(`${who(r)}: ${r.days === null ? 'mail kept for ever' : `acknowledged mail older than ${plural(r.days)} is deleted`}`);
  if (r.records_days !== undefined) lines.push(`wake records older than ${plural(r.records_days)} are pruned`);
  return lines.join('\n');
}

function runLines(r: RetentionRunOut): string {
  if (!r.ran) return `retention: another daemon is running it (${r.started_at}); nothing done here`;
  const kinds = Object.entries(r.records).map(([k, n]) => `${k} ${n}`);
  return [
    `retention run (${r.by}) ${r.started_at}: ${r.messages_deleted} message${r.messages_deleted === 1 ? '' : 's'} deleted, ${r.records_pruned} wake record${r.records_pruned === 1 ? '' : 's'} pruned${r.records_days !== undefined ? ` (older than ${plural(r.records_days)})` : ''}${r.errors ? `, ${r.errors} failed (see the log)` : ''}`,
    ...r.targets.map((t) => `  ${who(t)}: ${t.deleted}`),
    ...(kinds.length ? [`  records: ${kinds.join(', ')}`] : []),
  ].join('\n');
}

export function registerAdminRetention(admin: Command): void {
  const retention = admin.command('retention').description('delete acknowledged mail older than N days, per account or room (off by default)');
  common(retention.command('set').description('set (--days N) or turn off (--off) retention of an account or a room; --records-days N: how long wake records are kept'))
    .option('--account <id>', 'the account (its direct and session mail)')
    .option('--room <name>', 'the room (its mail goes once every member acknowledged it)')
    .option('--days <n>', 'delete acknowledged mail older than this many days')
    .option('--off', 'keep its mail for ever (the default)')
    .option(
      '--records-days <n>',
      `prune wake records (attempts, claims, surfaced facts) older than this many days (default ${RECORDS_DAYS_DEFAULT}, ${RECORDS_DAYS_MIN}..${RECORDS_DAYS_MAX})`,
    )
    .action((o: SetOptions) => {
      let req: RetentionSetRequest;
      try {
        req = setRequest(o);
      } catch (err) {
        fail(err, !!o.json);
      }
      return asOperator(o, (c) => c.admin.retentionSet(req), setLine);
    });
  common(retention.command('list').description('every setting and the last run')).action((o: OperatorOptions) =>
    asOperator(
      o,
      (c) => c.admin.retentionList(),
      (r) =>
        [
          r.settings.length ? table([['FOR', 'DAYS', 'SET'], ...r.settings.map((s) => [who(s), String(s.days), s.set_at])]) : 'no retention set: all mail is kept',
          `wake records are kept ${plural(r.records_days)}`,
          r.last_run ? runLines(r.last_run) : 'retention has not run yet',
        ].join('\n'),
    ),
  );
  common(retention.command('run').description('run retention now and print its counts')).action((o: OperatorOptions) => asOperator(o, (c) => c.admin.retentionRun(), runLines));
}
