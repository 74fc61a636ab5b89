// m4a import omp-mail [DIR]: an omp-mail user switches in one command. The files are read and
// checked here (omp-mail-files.ts); the account is made if missing (an agent account whose secret
// goes to the credentials file, as `m4a setup omp` would keep it); then the daemon, as the local
// operator, makes the sessions, names and mail (engine/import-omp-mail.ts). A large directory goes
// in several requests, each idempotent: running the command again finishes a run cut short and
// otherwise adds nothing.
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { MailError } from '../wire/errors.js';
import { neutralise, selectorProblem } from '../wire/text.js';
import type { ImportOmpMailRequest, ImportOmpMailResponse, ImportOmpMailResult, ImportedSession, OmpMessageIn, OmpSessionIn } from '../wire/import-omp-mail.js';
import { IMPORT_LIMITS } from '../wire/import-limits.js';
import type { MailClient } from '../client/http-client.js';
import { asOperator, operatorCommon, type OperatorOptions } from './admin-commands.js';
import { UsageError } from './connect.js';
import { readCredentials, writeCredentials } from './credentials.js';
import { readOmpMailDir, type OmpMailDir } from './omp-mail-files.js';
import { fail, table } from './output.js';
import { registerMailImports, withParents } from './import-mail-commands.js';
import { registerJsonlImport } from './backup-commands.js';

/** A request's JSON stays well under the daemon's 1 MiB body cap. */
const REQUEST_BUDGET = 768 * 1024;

const size = (v: unknown): number => Buffer.byteLength(JSON.stringify(v), 'utf8');

/** The requests for a directory: messages oldest first, each with the sessions it names (its
 *  mailbox, its sender when known); sessions without mail go last. */
export function packRequests(account: string, d: Pick<OmpMailDir, 'sessions' | 'messages'>, budget = REQUEST_BUDGET): ImportOmpMailRequest[] {
  const byId = new Map(d.sessions.map((s) => [s.id, s]));
  const out: ImportOmpMailRequest[] = [];
  const sent = new Set<string>();
  let sessions = new Map<string, OmpSessionIn>();
  let messages: OmpMessageIn[] = [];
  let bytes = 0;
  const flush = (): void => {
    out.push({ account, sessions: [...sessions.values()], messages });
    for (const id of sessions.keys()) sent.add(id);
    sessions = new Map();
    messages = [];
    bytes = 0;
  };
  const needs = (m: OmpMessageIn): OmpSessionIn[] => [...new Set([m.mailbox, m.from])].flatMap((id) => (byId.has(id) && !sessions.has(id) ? [byId.get(id)!] : []));
  for (const m of d.messages) {
    let need = needs(m);
    const cost = (): number => size(m) + need.reduce((n, s) => n + size(s), 0);
    if (messages.length > 0 && (messages.length >= IMPORT_LIMITS.messages || sessions.size + need.length > IMPORT_LIMITS.sessions || bytes + cost() > budget)) {
      flush();
      need = needs(m);
    }
    bytes += cost();
    for (const s of need) sessions.set(s.id, s);
    messages.push(m);
  }
  for (const s of d.sessions) {
    if (sent.has(s.id) || sessions.has(s.id)) continue;
    if (sessions.size >= IMPORT_LIMITS.sessions || bytes + size(s) > budget) flush();
    sessions.set(s.id, s);
    bytes += size(s);
  }
  if (sessions.size > 0 || messages.length > 0 || out.length === 0) flush();
  return out;
}

/** The answers of several requests as one: each session as last seen (created in any of them). */
export function mergeAnswers(answers: ImportOmpMailResponse[], account: string): ImportOmpMailResponse {
  const sessions = new Map<string, ImportedSession>();
  for (const a of answers)
    for (const s of a.sessions) {
      const was = sessions.get(s.omp_session);
      sessions.set(s.omp_session, {
        ...s,
        created: s.created || (was?.created ?? false),
        aliases_refused: was && !s.aliases_refused.length ? was.aliases_refused : s.aliases_refused,
      });
    }
  const list = [...sessions.values()];
  const sum = (k: 'messages_created' | 'messages_existing' | 'acknowledged'): number => answers.reduce((n, a) => n + a[k], 0);
  return {
    account,
    sessions: list,
    sessions_created: list.filter((s) => s.created).length,
    messages_created: sum('messages_created'),
    messages_existing: sum('messages_existing'),
    acknowledged: sum('acknowledged'),
  };
}

/** An agent account for the sessions; its secret is kept where `m4a setup omp` looks for it. */
async function ensureAccount(c: MailClient, account: string): Promise<boolean> {
  try {
    const { secret } = await c.admin.accountAdd({ id: account, kind: 'agent' });
    const creds = readCredentials();
    creds.accounts[account] = { secret, provider: 'omp' };
    writeCredentials(creds);
    return true;
  } catch (err) {
    if (err instanceof MailError && err.code === 'already_exists') return false;
    throw err;
  }
}

export async function runImport(c: MailClient, dir: string, read: OmpMailDir, account: string): Promise<ImportOmpMailResult> {
  const accountCreated = await ensureAccount(c, account);
  const requests = packRequests(account, read);
  const answers: ImportOmpMailResponse[] = [];
  for (const r of requests) answers.push(await c.admin.importOmpMail(r));
  return { ...mergeAnswers(answers, account), dir, account_created: accountCreated, requests: requests.length, adjusted: read.adjusted };
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Everything shown comes from omp-mail's files (names, paths, parser messages quoting them): one
 *  line each, with control characters (an ESC sequence, a newline) as \u escapes, never raw. */
export function describeImport(r: ImportOmpMailResult): string {
  const n = (s: string): string => neutralise(s);
  const lines = [
    `imported ${n(r.dir)} into account ${n(r.account)}${r.account_created ? ' (created)' : ''}: ` +
      `${plural(r.sessions.length, 'session')} (${r.sessions_created} new), ` +
      `${plural(r.messages_created, 'new message')} (${r.messages_existing} imported before), ${r.acknowledged} acknowledged as delivered in omp-mail`,
  ];
  if (r.sessions.length) lines.push(table(r.sessions.map((s) => [n(s.address), n(s.omp_session), n(s.aliases.join(' ')), s.created ? 'new' : ''])));
  for (const s of r.sessions) for (const a of s.aliases_refused) lines.push(`alias ${n(a.alias)} of ${n(s.omp_session)} not kept: ${n(a.reason)}`);
  for (const a of r.adjusted) lines.push(`${n(a.file)}${a.line ? `:${a.line}` : ''} ${n(a.field)}: ${n(a.change)}`);
  if (r.sessions_created) lines.push('Resume an omp conversation with the mail4agent extension (m4a setup omp) and it reads its mail.');
  return lines.join('\n');
}

export function registerImport(program: Command): void {
  const imp = program.command('import').description('bring mail from another mailbox into this one');
  registerMailImports(imp);
  registerJsonlImport(imp);
  operatorCommon(imp.command('omp-mail [dir]').description("omp-mail's sessions, aliases and mail (default ~/.omp/mail); safe to run again"))
    .option('--account <name>', 'the agent account the omp sessions belong to (created if missing)', 'omp')
    .action(async (dir: string | undefined, own: OperatorOptions & { account: string }, cmd: Command) => {
      const o = { ...withParents(own, cmd), account: own.account };
      const from = dir ?? join(homedir(), '.omp', 'mail');
      let read: OmpMailDir;
      try {
        // Every file is checked before the daemon is asked for anything.
        const bad = selectorProblem(o.account);
        if (bad) throw new UsageError(`--account ${neutralise(o.account)}: ${bad}`);
        read = readOmpMailDir(from);
      } catch (err) {
        // A system error names the path it failed on: shown like every other name from the files.
        fail(err instanceof MailError || err instanceof UsageError ? err : new Error(neutralise(err instanceof Error ? err.message : String(err))), !!o.json);
      }
      await asOperator(o, (c) => runImport(c, from, read, o.account), describeImport);
    });
}
