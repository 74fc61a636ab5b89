// m4a report: a support report in Markdown that can be pasted into an issue. It holds versions,
// the platform, the daemon's state, doctor's checks, counts and statistics of the daemon's log,
// and nothing of whose mailbox it is: every name, path, address, id and credential goes through
// report-sanitize.ts. Of the daemon it asks only what carries no mail (`Sources`): counts,
// cards, the registry's names (to replace them), /health; it never reads a subject or a body.
import type { Command } from 'commander';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { arch, homedir, hostname, release, type as osType, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { MailClient, type Health } from '../client/http-client.js';
import { MailError } from '../wire/errors.js';
import { pathOf } from '../wire/operation-facts.js';
import type { SupportCountsResponse, SupportSessionsResponse } from '../wire/support.js';
import type { RoomListResponse } from '../wire/admin.js';
import type { TeamListResponse } from '../wire/teams.js';
import { probe, readDaemonInfo } from './autostart.js';
import { CLI_VERSION, UsageError } from './connect.js';
import { credentialsPath, readCredentials } from './credentials.js';
import { daemonUrl, daemonTarget, dataDirFrom, operatorToken } from './daemon-target.js';
import { runDoctor, type Check } from './doctor.js';
import { fail } from './output.js';
import { logStats, LOG_TAIL_BYTES, type LogStats } from './report-logs.js';
import { Sanitizer } from './report-sanitize.js';

/** Everything the report asks the daemon: no answer here has a subject or a body in its type. */
interface Sources {
  health(): Promise<Health>;
  counts(): Promise<SupportCountsResponse>;
  sessions(): Promise<SupportSessionsResponse>;
  accounts(): Promise<{ accounts: { id: string; label: string }[] }>;
  rooms(): Promise<RoomListResponse>;
  teams(): Promise<TeamListResponse>;
}

function sources(c: MailClient): Sources {
  return {
    health: () => c.health(),
    counts: () => c.call(pathOf('support.counts'), {}),
    sessions: () => c.call(pathOf('support.sessions'), { include_ended: true }),
    accounts: () => c.admin.accountList(),
    rooms: () => c.admin.roomList(),
    teams: () => c.admin.teamList(),
  };
}

interface Facts {
  generatedAt: string;
  dataDir: string;
  url: string;
  daemon: { health: Health; startedAt: string | null; auto: boolean | null; stream: boolean } | null;
  counts: SupportCountsResponse | null;
  /** Why the counts are missing (the daemon down, or an answer refused). */
  countsError: string | null;
  checks: Check[];
  log: LogStats | null;
}

/** The daemon's own accounts (the operator's, and the reminders' sender): the program's names. */
const OWN_ACCOUNTS = ['operator', 'mailbox'];

/** Registers every name the report must not show, before anything is cleaned. */
async function learnNames(s: Sanitizer, src: Sources | null, dataDir: string, env: NodeJS.ProcessEnv): Promise<void> {
  const home = env.HOME || homedir();
  for (const p of [dataDir, home, process.cwd(), credentialsPath(env)]) s.name('path', p);
  s.name('host', hostname());
  try {
    s.name('user', userInfo().username);
  } catch {
    /* no user entry: nothing to hide */
  }
  if (env.USER) s.name('user', env.USER);
  for (const k of ['M4A_TOKEN', 'M4A_STORE']) if (env[k]) s.name('secret', env[k]);
  try {
    s.name('secret', operatorToken(dataDir));
  } catch {
    /* no daemon ran here yet */
  }
  for (const [name, acc] of Object.entries(readCredentials(env).accounts)) {
    s.name('account', name);
    s.name('secret', acc.secret);
  }
  if (!src) return;
  const [accounts, rooms, teams, sessions] = await Promise.all([src.accounts(), src.rooms(), src.teams(), src.sessions()]);
  // Teams first: a team is also listed as a room, and the first kind a name is learnt as stays.
  for (const t of teams.teams) s.name('team', t.name);
  for (const r of rooms.rooms) s.name('room', r.name);
  for (const a of accounts.accounts) {
    if (OWN_ACCOUNTS.includes(a.id)) continue;
    s.name('account', a.id);
    s.name('label', a.label);
  }
  for (const x of sessions.sessions) {
    if (!OWN_ACCOUNTS.includes(x.account)) s.name('account', x.account);
    s.name('name', x.slug);
    for (const a of x.aliases) {
      s.name('name', a);
      s.name('name', a.replace(/^@/, ''));
    }
    const c = x.card.corroborated;
    s.name('id', c.provider_session_id);
    s.name('path', c.cwd);
    s.name('host', x.card.attested?.host);
    s.name('path', x.card.attested?.exe);
  }
}

async function gather(dataDir: string, env: NodeJS.ProcessEnv, s: Sanitizer): Promise<Facts> {
  const url = daemonUrl(dataDir, env);
  const up = await probe(url);
  let src: Sources | null = null;
  let client: MailClient | null = null;
  let daemon: Facts['daemon'] = null;
  let counts: SupportCountsResponse | null = null;
  let countsError: string | null = up ? null : 'the daemon is not running';
  try {
    if (up) {
      client = new MailClient({ url, token: operatorToken(dataDir) });
      src = sources(client);
      const info = readDaemonInfo(dataDir);
      daemon = { health: await src.health(), startedAt: info?.started_at ?? null, auto: info?.auto ?? null, stream: daemonTarget(dataDir, env).socket !== undefined };
      // Counts before doctor: its whoami of each stored secret registers a session of this process.
      try {
        counts = await src.counts();
      } catch (err) {
        countsError = err instanceof MailError ? err.code : 'unreachable';
      }
    }
    // Without the names nothing could be cleaned of them: a failure here fails the report.
    await learnNames(s, src, dataDir, env);
  } finally {
    client?.close();
  }
  const checks = await runDoctor({ dataDir }, env);
  return { generatedAt: new Date().toISOString(), dataDir, url, daemon, counts, countsError, checks, log: logStats(join(dataDir, 'daemon.log'), s) };
}

const cell = (v: string): string => v.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
const rows = (r: [string, string][]): string => ['| | |', '|---|---|', ...r.map(([k, v]) => `| ${k} | ${cell(v)} |`)].join('\n');
const kib = (n: number): string => `${(n / 1024).toFixed(1)} KiB`;
const sum = (o: Record<string, number>): number => Object.values(o).reduce((a, b) => a + b, 0);
const listed = (o: Record<string, number>): string =>
  Object.entries(o)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');

function uptime(startedAt: string | null): string {
  if (!startedAt) return 'unknown';
  const secs = Math.max(0, Math.round((Date.now() - Date.parse(startedAt)) / 1000));
  const [d, h, m] = [Math.floor(secs / 86400), Math.floor((secs % 86400) / 3600), Math.floor((secs % 3600) / 60)];
  return d ? `${d}d ${h}h ${m}m` : h ? `${h}h ${m}m` : m ? `${m}m ${secs % 60}s` : `${secs}s`;
}

export function renderReport(f: Facts, s: Sanitizer): string {
  const out: string[] = [
    '# mail4agent support report',
    '',
    `Generated ${f.generatedAt}. Names, paths, addresses, ids and credentials are replaced by placeholders (account-1, path-1, …); no subject or body was read.`,
    '',
    '## Versions',
    '',
    rows([
      ['mail4agent (cli)', CLI_VERSION],
      ['mail4agent (daemon)', f.daemon?.health.version ?? 'not running'],
      ['Node.js', process.version],
      ['OS', `${osType()} ${release()} (${process.platform}, ${arch()})`],
    ]),
    '',
    '## Daemon',
    '',
  ];
  const d = f.daemon;
  out.push(
    d
      ? rows([
          ['running', 'yes'],
          ['address', s.clean(f.url)],
          ['uptime', uptime(d.startedAt)],
          ['started', d.auto === null ? 'unknown' : d.auto ? 'on demand (auto)' : 'm4a serve'],
          ['store', d.health.store],
          ['attestation', d.health.attestation ? 'yes' : 'no'],
          ['doors', ['http', 'mcp', 'web', ...(d.stream ? ['stream'] : [])].join(', ')],
        ])
      : rows([['running', 'no']]),
    '',
    '## Doctor',
    '',
    '| status | check | detail |',
    '|---|---|---|',
    ...f.checks.map((c) => `| ${c.status} | ${cell(s.clean(c.name))} | ${cell(s.clean(c.detail))}${c.todo ? ` → ${cell(s.clean(c.todo))}` : ''} |`),
    '',
    '## Counts',
    '',
  );
  const c = f.counts;
  if (!c) out.push(`Not available: ${f.countsError ?? 'unknown'}.`);
  else {
    const { chains, ...kinds } = c.wake_chains;
    out.push(
      `- accounts: ${sum(c.accounts)} (${listed(c.accounts)})`,
      `- sessions: ${c.sessions.live + c.sessions.ended} (live ${c.sessions.live}, ended ${c.sessions.ended})`,
      `- rooms: ${c.rooms.rooms} (everyone-rooms ${c.rooms.everyone}); teams: ${c.rooms.teams}`,
      `- messages: ${c.messages.stored} stored (the store's highest seq: ${c.messages.head_seq})`,
      `- unread: ${c.unread.total} (account and room mail, of ${c.unread.accounts_with_unread} account${c.unread.accounts_with_unread === 1 ? '' : 's'})`,
      `- tasks: ${sum(c.tasks)} (${listed(c.tasks)})`,
      `- approvals: ${sum(c.approvals)} (${listed(c.approvals)})`,
      `- leases live: ${c.leases.live}`,
      `- wake chains: ${chains} (${listed(kinds)})`,
    );
  }
  out.push('', '## Log', '');
  const l = f.log;
  if (!l) out.push('No daemon.log in the data directory (a daemon run with `m4a serve` logs to its terminal).');
  else {
    out.push(
      `daemon.log: the last ${kib(l.read)} of ${kib(l.size)} (at most ${kib(LOG_TAIL_BYTES)} is read), ${l.lines} lines.`,
      '',
      `By level: ${listed(l.byLevel) || 'none'}.`,
      '',
      '| count | level | message (numbers as N) |',
      '|---|---|---|',
      ...l.templates.map((t) => `| ${t.count} | ${t.level} | ${cell(t.template)} |`),
    );
  }
  return `${out.join('\n')}\n`;
}

interface ReportOptions {
  dataDir?: string;
  stdout?: boolean;
  output?: string;
  force?: boolean;
}

/** Writes a new file 0600; an existing one only with force (then overwritten, and made 0600). */
function writeReport(path: string, text: string, force: boolean): void {
  if (existsSync(path) && !force) throw new MailError('already_exists', `${path} exists: m4a report keeps it (--force overwrites it)`, { field: 'output' });
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, text, { mode: 0o600, flag: force ? 'w' : 'wx' });
  chmodSync(path, 0o600);
}

export async function runReport(o: ReportOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (o.stdout && o.output) throw new UsageError('report: --stdout or --output, not both');
  const dataDir = dataDirFrom(o.dataDir, env);
  const s = new Sanitizer();
  const text = renderReport(await gather(dataDir, env, s), s);
  if (o.stdout) {
    process.stdout.write(text);
    return;
  }
  const path = o.output ? resolve(o.output) : join(dataDir, 'reports', `report-${new Date().toISOString().replace(/[:.]/g, '-')}.md`);
  writeReport(path, text, !!o.force);
  process.stdout.write(`${path}\n`);
}

export function registerReport(program: Command): void {
  program
    .command('report')
    .description('a support report in Markdown (versions, daemon, doctor, counts, log statistics) with every name, path, id and secret replaced')
    .option('--stdout', 'print it instead of writing a file')
    .option('--output <path>', 'write it here (an existing file is kept unless --force)')
    .option('--force', 'overwrite the --output file')
    .option('--data-dir <dir>', "the daemon's data directory")
    .action(async (o: ReportOptions) => {
      try {
        await runReport(o);
      } catch (err) {
        fail(err, false);
      }
    });
}
