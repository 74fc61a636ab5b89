// m4a admin retention …: how long acknowledged mail is kept per account or room (docs/operations.md
// "Retention"), and a run now.
import type { Command } from 'commander';
import type { RetentionRunOut } from '../wire/retention.js';
import { asOperator, operatorCommon as common, type OperatorOptions } from './admin-commands.js';
import { UsageError } from './connect.js';
import { fail, table } from './output.js';

const who = (t: { account?: string | undefined; room?: string | undefined }): string => (t.room !== undefined ? `#${t.room}` : (t.account ?? '?'));

function runLines(r: RetentionRunOut): string {
  if (!r.ran) return `retention: another daemon is running it (${r.started_at}); nothing done here`;
  const kinds = Object.entries(r.records).map(([k, n]) => `${k} ${n}`);
  return [
    `retention run (${r.by}) ${r.started_at}: ${r.messages_deleted} message${r.messages_deleted === 1 ? '' : 's'} deleted, ${r.records_pruned} wake record${r.records_pruned === 1 ? '' : 's'} pruned${r.errors ? `, ${r.errors} failed (see the log)` : ''}`,
    ...r.targets.map((t) => `  ${who(t)}: ${t.deleted}`),
    ...(kinds.length ? [`  records: ${kinds.join(', ')}`] : []),
  ].join('\n');
}

export function registerAdminRetention(admin: Command): void {
  const retention = admin.command('retention').description('delete acknowledged mail older than N days, per account or room (off by default)');
  common(retention.command('set').description('set (--days N) or turn off (--off) retention of an account or a room'))
    .option('--account <id>', 'the account (its direct and session mail)')
    .option('--room <name>', 'the room (its mail goes once every member acknowledged it)')
    .option('--days <n>', 'delete acknowledged mail older than this many days')
    .option('--off', 'keep its mail for ever (the default)')
    .action((o: OperatorOptions & { account?: string; room?: string; days?: string; off?: boolean }) => {
      const json = !!o.json;
      if ((o.account === undefined) === (o.room === undefined)) fail(new UsageError('retention set: give --account or --room'), json);
      if ((o.days === undefined) === !o.off) fail(new UsageError('retention set: give --days N or --off'), json);
      const days = o.off ? null : Number(o.days);
      if (days !== null && !(Number.isInteger(days) && days >= 1)) fail(new UsageError(`retention set: --days takes a whole number of days, at least 1 (not ${o.days})`), json);
      const target = o.account !== undefined ? { account: o.account } : { room: o.room as string };
      return asOperator(
        o,
        (c) => c.admin.retentionSet({ ...target, days }),
        (r) => `${who(r)}: ${r.days === null ? 'mail kept for ever' : `acknowledged mail older than ${r.days} day${r.days === 1 ? '' : 's'} is deleted`}`,
      );
    });
  common(retention.command('list').description('every setting and the last run')).action((o: OperatorOptions) =>
    asOperator(
      o,
      (c) => c.admin.retentionList(),
      (r) =>
        [
          r.settings.length ? table([['FOR', 'DAYS', 'SET'], ...r.settings.map((s) => [who(s), String(s.days), s.set_at])]) : 'no retention set: all mail is kept',
          `wake records are kept ${r.records_days} days`,
          r.last_run ? runLines(r.last_run) : 'retention has not run yet',
        ].join('\n'),
    ),
  );
  common(retention.command('run').description('run retention now and print its counts')).action((o: OperatorOptions) => asOperator(o, (c) => c.admin.retentionRun(), runLines));
}
