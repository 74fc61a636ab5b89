// m4a guard …: a git pre-commit hook that refuses a commit staging files another live session
// reserved exclusively (docs/leases.md, "File reservations"). The guard is a courtesy between
// agents, never a lock on the repository: a daemon that does not answer, or a caller without
// credentials, gets a warning and the commit goes on; M4A_GUARD=off skips it for one commit.
import type { Command } from 'commander';
import type { MailClient } from '../client/http-client.js';
import type { LeaseCheckResponse } from '../wire/leases.js';
import { clipUtf8, neutralise } from '../wire/text.js';
import { EXIT } from './output.js';
import { shortAddress } from './format.js';
import { CHAINED, git, install, uninstall } from './guard-hook.js';

/** How long the guard waits for the daemon before it lets the commit through. */
export const GUARD_TIMEOUT_MS = 2000;

const say = (line: string): void => void process.stderr.write(`m4a guard: ${neutralise(line)}\n`);
/** An error as a warning prints it: `code: message` for the daemon's named errors. */
const why = (err: unknown): string => (err instanceof Error ? ('code' in err && typeof err.code === 'string' ? `${err.code}: ${err.message}` : err.message) : String(err));

/** Every path the commit changes, both sides of a rename (renames off: a delete and an add),
 *  from the index git is about to commit (GIT_INDEX_FILE is honoured for `commit <paths>`). */
export function stagedPaths(cwd: string): string[] {
  const out = git(['diff', '--cached', '--name-only', '-z', '--no-renames', '--diff-filter=ACDMRT'], cwd).toString('utf8');
  return [...new Set(out.split('\0').filter((p) => p !== ''))];
}

const inTime = (iso: string, now = Date.now()): string => {
  const s = Math.round((Date.parse(iso) - now) / 1000);
  return s < 60 ? `${Math.max(s, 0)}s` : s < 3600 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`;
};

/** The refusal, one block per path: who holds it, why, until when. */
export function refusal(conflicts: LeaseCheckResponse['conflicts']): string[] {
  const byPath = new Map<string, LeaseCheckResponse['conflicts']>();
  for (const c of conflicts) byPath.set(c.path, [...(byPath.get(c.path) ?? []), c]);
  const lines = [`commit refused: ${byPath.size} staged path${byPath.size === 1 ? ' is' : 's are'} reserved by another session`];
  for (const [path, cs] of byPath) {
    lines.push(`  ${path}`);
    for (const { lease: l } of cs)
      lines.push(
        `    held by ${shortAddress(l.holder)} (${l.resource}, ${l.mode}) until ${l.expires_at} (in ${inTime(l.expires_at)})${l.reason !== undefined ? `: ${l.reason}` : ''}`,
      );
  }
  lines.push('ask the holder (m4a send <holder> …), wait until the reservation ends, or commit once with M4A_GUARD=off');
  return lines;
}

/** Exit code of the hook: 0 lets the commit go on, 1 refuses it. */
export async function runCheck(cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if ((env.M4A_GUARD ?? '').toLowerCase() === 'off') {
    say('M4A_GUARD=off: this commit is not checked against file reservations');
    return EXIT.ok;
  }
  let root: string;
  let paths: string[];
  try {
    root = git(['rev-parse', '--show-toplevel'], cwd).toString('utf8').trim();
    paths = stagedPaths(cwd);
  } catch (err) {
    say(`warning: ${err instanceof Error ? err.message : String(err)}; the commit is not checked`);
    return EXIT.ok;
  }
  if (paths.length === 0) return EXIT.ok;
  let client: MailClient | undefined;
  try {
    // Loaded here, not at start-up: every other m4a command stays free of them.
    const [{ MailClient }, { chooseAccount }, { daemonTarget, dataDirFrom }, { askable, askAll }] = await Promise.all([
      import('../client/http-client.js'),
      import('./credentials.js'),
      import('./daemon-target.js'),
      import('./guard-ask.js'),
    ]);
    const choice = chooseAccount(undefined, env);
    if ('error' in choice) throw new Error(choice.error);
    // Never start a daemon from a commit: one that is not running holds no live session.
    const c = new MailClient({ ...daemonTarget(dataDirFrom(undefined, env), env), token: choice.secret, timeoutMs: GUARD_TIMEOUT_MS });
    client = c;
    // A path the daemon's schema refuses (control, format or invisible characters, over the
    // limit) would make it refuse the whole question: leave it out, and say so.
    const { asked, leftOut } = askable(paths);
    if (leftOut.length > 0) {
      const first = leftOut[0]!;
      say(
        `warning: ${leftOut.length} path${leftOut.length === 1 ? '' : 's'} not checked: the daemon cannot be asked about ${leftOut.length === 1 ? 'it' : 'them'} (first: ${clipUtf8(first.path, 160)}: ${first.reason})`,
      );
    }
    const r = await askAll((req) => c.lease.check(req), root, asked);
    if (r.unchecked > 0) {
      if (r.checked === 0) say(`warning: could not ask the daemon (${why(r.failure)}); the commit is not checked against file reservations`);
      else say(`warning: ${r.unchecked + leftOut.length} of ${paths.length} staged paths NOT checked against file reservations (${why(r.failure)})`);
    }
    // A conflict any answered batch found refuses the commit, whatever the others did.
    if (r.conflicts.length === 0) return EXIT.ok;
    for (const line of refusal(r.conflicts)) say(line);
    return EXIT.failed;
  } catch (err) {
    say(`warning: could not ask the daemon (${why(err)}); the commit is not checked against file reservations`);
    return EXIT.ok;
  } finally {
    client?.close();
  }
}

export function registerGuard(program: Command): void {
  const guard = program.command('guard').description('a git pre-commit hook that refuses commits staging files another session reserved (m4a reserve)');

  const setup = (fn: () => string): void => {
    try {
      process.stdout.write(`${fn()}\n`);
    } catch (err) {
      process.stderr.write(`m4a: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(EXIT.failed);
    }
  };

  guard
    .command('install')
    .description(`install the hook in this repository (idempotent; a pre-commit hook already there keeps running first, as ${CHAINED})`)
    .action(() =>
      setup(() => {
        const r = install(process.cwd());
        const what = { installed: 'installed', updated: 'updated', unchanged: 'already installed' }[r.action];
        return `${what}: ${r.hook}${r.chained ? ` (runs ${r.chained} first)` : ''}`;
      }),
    );

  guard
    .command('uninstall')
    .description('remove the hook and put back the one that was there before')
    .action(() =>
      setup(() => {
        const r = uninstall(process.cwd());
        return {
          removed: `removed: ${r.hook}`,
          restored: `removed; the earlier hook is back: ${r.hook}`,
          not_installed: `not installed: no hook at ${r.hook}`,
          foreign: `not installed: ${r.hook} is not ours, left as it is`,
        }[r.action];
      }),
    );

  guard
    .command('check')
    .description('what the hook runs: refuse (exit 1) if a staged path is reserved exclusively by another live session')
    .action(async () => {
      process.exitCode = await runCheck(process.cwd());
    });
}
