// m4a open [ACCOUNT|SESSION]: a person attaches to an agent's own conversation from a terminal.
// The daemon's card of the session names its program (provider), the program's own session id
// and the working directory; this prints the program's resume command there, or with --exec runs
// it with the terminal. The card is read through the local operator's /admin/support/sessions,
// so looking costs no session of an account (an account's whoami would register this process).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { MailClient } from '../client/http-client.js';
import { MailError } from '../wire/errors.js';
import { pathOf } from '../wire/operation-facts.js';
import type { SupportSessionsResponse } from '../wire/support.js';
import { AGENT_SESSION_ID, type AgentProgram } from '../wire/capabilities.js';
import { AGENT_SESSION_VARS } from '../wire/inherited-env.js';
import { ensureDaemon } from './autostart.js';
import { UsageError } from './connect.js';
import { daemonSocket, dataDirFrom, operatorToken } from './daemon-target.js';
import { fail, printJson } from './output.js';

type Session = SupportSessionsResponse['sessions'][number];

/** Each program's command that resumes one of its conversations by id, in the directory it ran in
 *  (as each CLI's --help documents; pi and omp as test/agents drives them). Copilot's `--resume`
 *  takes its value optionally, so it is joined with `=`. */
const RESUME: Readonly<Partial<Record<AgentProgram, (id: string) => string[]>>> = {
  claude: (id) => ['claude', '--resume', id],
  codex: (id) => ['codex', 'resume', id],
  pi: (id) => ['pi', '--session', id],
  omp: (id) => ['omp', '--resume', id],
  gemini: (id) => ['gemini', '--resume', id],
  qwen: (id) => ['qwen', '--resume', id],
  opencode: (id) => ['opencode', '--session', id],
  copilot: (id) => ['copilot', `--resume=${id}`],
};

/** What the resumed program must not inherit: the credentials and ids this shell may hold for
 *  mail4agent or for an outer agent (the program is the person's own: the rest of their
 *  environment, API keys and terminal included, is theirs to give it). See wire/inherited-env.ts. */
const NOT_INHERITED: readonly string[] = ['M4A_TOKEN', 'M4A_ACCOUNT', 'M4A_CREDENTIALS', 'M4A_STORE', ...AGENT_SESSION_VARS];

export function resumeEnv(from: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const pg = /^postgres(ql)?:\/\//.test(from.M4A_STORE ?? '');
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(from)) if (v !== undefined && !NOT_INHERITED.includes(k) && !(pg && k.startsWith('PG'))) out[k] = v;
  return out;
}

export interface Resume {
  address: string;
  provider: string;
  provider_session_id: string;
  cwd: string | null;
  live: boolean;
  argv: string[];
  /** One shell line: `cd DIR && PROGRAM …`. */
  command: string;
}

const quote = (a: string): string => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);

/** The newest session of the target's lineage that named its program's session id. */
export function chooseSession(target: string | undefined, sessions: readonly Session[]): Session {
  const byAddress = new Map(sessions.map((s) => [s.address, s]));
  const newest = (s: Session): Session => {
    let at = s;
    for (let n = 0; at.successor && byAddress.has(at.successor) && n < sessions.length; n++) at = byAddress.get(at.successor)!;
    return at;
  };
  const slash = target?.indexOf('/') ?? -1;
  const account = target === undefined ? undefined : slash === -1 ? target : target.slice(0, slash);
  const rest = target !== undefined && slash !== -1 ? target.slice(slash + 1) : undefined;
  let candidates = sessions.filter((s) => account === undefined || s.account === account);
  if (rest !== undefined) {
    candidates = candidates.filter((s) =>
      rest.startsWith('s-') ? s.address.slice(s.account.length + 1).startsWith(rest) : rest.startsWith('@') ? s.aliases.includes(rest) : s.slug === rest,
    );
    if (candidates.length === 0) throw new MailError('unknown_session', `no session ${target}`, { participant: account ?? '', session: rest });
  } else if (candidates.length === 0) throw new MailError('unknown_session', `no session of ${account ?? 'any account'} is on record`, { participant: account ?? '' });
  const chosen = candidates.map(newest).find((s) => s.card.corroborated.provider_session_id !== undefined);
  if (!chosen)
    throw new MailError('not_supported', `no session of ${target ?? 'any account'} named its program's own session id, so none can be resumed`, { field: 'provider_session_id' });
  return chosen;
}

export function resumeOf(s: Session): Resume {
  const { provider, provider_session_id: id, cwd } = s.card.corroborated;
  const make = provider === undefined ? undefined : RESUME[provider as AgentProgram];
  if (!make || provider === undefined || id === undefined)
    throw new MailError('not_supported', `${s.address} ran ${provider ?? 'an unknown program'}, which m4a open cannot resume (${Object.keys(RESUME).join(', ')} it can)`, {
      field: 'provider',
      provider: provider ?? null,
    });
  // A card stored before attestation checked the id's shape: an option would reach the program.
  if (!AGENT_SESSION_ID.test(id))
    throw new MailError('not_supported', `${s.address} names ${JSON.stringify(id)}, which is no session id m4a open puts on a command line`, { field: 'provider_session_id' });
  const argv = make(id);
  const line = argv.map(quote).join(' ');
  return { address: s.address, provider, provider_session_id: id, cwd: cwd ?? null, live: s.live, argv, command: cwd ? `cd ${quote(cwd)} && ${line}` : line };
}

async function sessionsFor(dataDir: string, account: string | undefined): Promise<Session[]> {
  const url = await ensureDaemon(dataDir);
  const c = new MailClient({ url, token: operatorToken(dataDir), socket: daemonSocket(dataDir, url) });
  try {
    const r = await c.call<SupportSessionsResponse>(pathOf('support.sessions'), { include_ended: true, ...(account ? { account } : {}) });
    return r.sessions;
  } finally {
    c.close();
  }
}

/** Runs the program with the terminal, in the session's directory; resolves to its exit code. */
function execResume(r: Resume): Promise<number> {
  const cwd = r.cwd ?? process.cwd();
  if (!existsSync(cwd))
    throw new MailError('unknown_session', `${r.address} ran in ${cwd}, which no longer exists`, { participant: r.address.split('/')[0] ?? '', session: r.address });
  return new Promise((resolve, reject) => {
    const child = spawn(r.argv[0]!, r.argv.slice(1), { cwd, stdio: 'inherit', env: resumeEnv(process.env) });
    // The terminal's ^C reaches the program (same process group); this process only waits for it.
    const ignore = (): void => undefined;
    process.on('SIGINT', ignore);
    child.once('error', (err: NodeJS.ErrnoException) => {
      process.off('SIGINT', ignore);
      reject(err.code === 'ENOENT' ? new Error(`${r.argv[0]} is not on PATH`) : err);
    });
    child.once('exit', (code, signal) => {
      process.off('SIGINT', ignore);
      resolve(code ?? (signal === 'SIGINT' ? 130 : 1));
    });
  });
}

interface OpenOptions {
  exec?: boolean;
  force?: boolean;
  json?: boolean;
  dataDir?: string;
}

export function registerOpen(program: Command): void {
  program
    .command('open [target]')
    .description("print (or with --exec run) the resume command of an agent's own conversation: ACCOUNT (its latest) or ACCOUNT/s-…, ACCOUNT/slug, ACCOUNT/@alias")
    .option('--exec', "run it in the session's directory with this terminal")
    .option('--force', 'with --exec: resume even though the session is live (an agent runs it now)')
    .option('--json', 'print the command as JSON')
    .option('--data-dir <dir>', "the daemon's data directory")
    .action(async (target: string | undefined, o: OpenOptions) => {
      try {
        if (o.force && !o.exec) throw new UsageError('open: --force goes with --exec');
        if (o.exec && o.json) throw new UsageError('open: --exec or --json, not both');
        const account = target === undefined ? undefined : target.split('/')[0];
        const r = resumeOf(chooseSession(target, await sessionsFor(dataDirFrom(o.dataDir), account)));
        if (o.json) return printJson(r);
        if (!o.exec) {
          process.stdout.write(`# ${r.address}: ${r.provider} ${r.live ? 'live (an agent runs it now)' : 'not running'}\n${r.command}\n`);
          return;
        }
        if (r.live && !o.force) {
          process.stderr.write(`m4a: session_live: ${r.address} is live: its agent holds the conversation now (--force resumes it anyway)\n`);
          process.exit(1);
        }
        process.exit(await execResume(r));
      } catch (err) {
        fail(err, !!o.json);
      }
    });
}
