// m4a reserve … and m4a lease …: file reservations (path: leases on globs of a repository) and
// the leases one holds (docs/leases.md). --json prints the daemon's answer as it is; text names
// holder, resource and expiry, passed through printText (reasons are other agents' words). Only
// types come from the wire's lease schemas: zod stays off the CLI's start-up.
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import type { LeaseOut } from '../wire/leases.js';
import { neutralise } from '../wire/text.js';
import { UsageError } from './connect.js';
import { common, run, type Common } from './agent-command.js';
import { bold, dim, green, table } from './format.js';
import { parseDuration } from './wake-commands.js';

/** The repository the current directory is in (git's top level), else the directory itself. */
export function repoRoot(cwd: string): string {
  try {
    const top = execFileSync('git', ['rev-parse', '--show-toplevel'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).trim();
    if (top) return top;
  } catch {
    /* not a repository, or no git: the directory is the root */
  }
  return cwd;
}

/** A glob as the daemon compares it: relative to the root. Like a git pathspec, one typed in a
 *  directory below the root is relative to that directory; an absolute one inside the root is
 *  made relative to it. */
export function globUnder(root: string, cwd: string, glob: string): string {
  const g = glob.replace(/^(\.\/)+/, '');
  if (isAbsolute(g)) {
    const r = relative(root, g);
    if (r === '' || r.startsWith('..') || isAbsolute(r)) throw new UsageError(`${neutralise(g)} is not inside the repository root ${neutralise(root)}`);
    return r.split(sep).join('/') + (g.endsWith('/') ? '/' : '');
  }
  const here = relative(root, cwd);
  if (here === '' || here.startsWith('..') || isAbsolute(here)) return g;
  return `${here.split(sep).join('/')}/${g}`;
}

/** A glob without wildcards that names a directory on disk reserves what is under it (`src/parser`
 *  becomes `src/parser/`): a glob means exactly the paths it matches, and git stages files. */
export function directoryAware(root: string, glob: string): string {
  if (/[*?[]/.test(glob) || glob.endsWith('/')) return glob;
  try {
    return statSync(join(root, glob)).isDirectory() ? `${glob}/` : glob;
  } catch {
    return glob;
  }
}

const ttl = (v: string): number => {
  try {
    return parseDuration(v);
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
  }
};

/** How long until an ISO time: in 29m, in 1h 30m; expired. */
export function until(iso: string, now = Date.now()): string {
  const s = Math.round((Date.parse(iso) - now) / 1000);
  if (s <= 0) return 'expired';
  if (s < 60) return `in ${s}s`;
  if (s < 3600) return `in ${Math.floor(s / 60)}m`;
  const m = Math.floor((s % 3600) / 60);
  return `in ${Math.floor(s / 3600)}h${m ? ` ${m}m` : ''}`;
}

const where = (l: LeaseOut): string => (l.root !== undefined ? `${l.resource} in ${l.root}` : l.resource);

/** One line: what reserve, renew and release answer. */
const leaseLine = (l: LeaseOut): string =>
  `${bold(l.lease_id)} epoch ${l.epoch} · ${where(l)} · ${l.mode} · ${l.holder} · until ${l.expires_at} (${until(l.expires_at)})${l.reason !== undefined ? ` · ${l.reason}` : ''}`;

export function leaseTable(leases: readonly LeaseOut[]): string {
  if (leases.length === 0) return dim('no leases');
  const rows = [
    ['HOLDER', 'RESOURCE', 'MODE', 'EXPIRES', 'LEASE', 'EPOCH', 'REASON'],
    ...leases.map((l) => [l.holder, where(l), l.mode, until(l.expires_at), l.lease_id, String(l.epoch), l.reason ?? '']),
  ];
  return table(rows);
}

export function registerLeases(program: Command): void {
  common(
    program
      .command('reserve <glob...>')
      .description(
        'reserve files of this repository so other agents keep off them (all the globs, or none; a directory covers what is under it): e.g. m4a reserve "src/parser/**" --ttl 30m --reason refactor',
      ),
  )
    .option('--ttl <duration>', 'how long: 90s, 30m, 2h (10s to 8h; default 15m); renew to keep it', ttl)
    .option('--reason <text>', 'why: others see it, and the commit guard prints it')
    .option('--shared', 'a shared reservation: coexists with other shared ones, never with an exclusive one')
    .option('--root <dir>', 'the repository root (default: git rev-parse --show-toplevel, else the current directory)')
    .action((globs: string[], o: Common & { ttl?: number; reason?: string; shared?: boolean; root?: string }) =>
      run(
        o,
        (c) => {
          const cwd = process.cwd();
          const root = o.root !== undefined ? resolve(o.root) : repoRoot(cwd);
          return c.lease.reserve({
            paths: globs.map((g) => directoryAware(root, globUnder(root, cwd, g))),
            root,
            ...(o.shared ? { mode: 'shared' as const } : {}),
            ...(o.ttl !== undefined ? { ttl_secs: o.ttl } : {}),
            ...(o.reason !== undefined ? { reason: o.reason } : {}),
          });
        },
        (r) => r.leases.map((l) => `${green('reserved')} ${leaseLine(l)}`).join('\n'),
      ),
    );

  const lease = program.command('lease').description('leases: reservations of files (m4a reserve) and claims of pooled tasks, which expire unless renewed');

  common(lease.command('list').description('live leases, whoever holds them'))
    .option('--prefix <prefix>', 'only resources starting so: path:src/, t-')
    .option('--holder <address>', 'only this holder: an account, or account/session')
    .option('--root <dir>', 'only reservations of this repository root')
    .action((o: Common & { prefix?: string; holder?: string; root?: string }) =>
      run(
        o,
        (c) =>
          c.lease.list({
            ...(o.prefix !== undefined ? { resource_prefix: o.prefix } : {}),
            ...(o.holder !== undefined ? { holder: o.holder } : {}),
            ...(o.root !== undefined ? { root: resolve(o.root) } : {}),
          }),
        (r) => leaseTable(r.leases),
      ),
    );

  common(lease.command('renew <lease-id> <epoch>').description('extend a lease you hold (from now: --ttl, default 15m)'))
    .option('--ttl <duration>', 'how long from now: 90s, 30m, 2h (10s to 8h)', ttl)
    .action((id: string, epoch: string, o: Common & { ttl?: number }) =>
      run(
        o,
        (c) => c.lease.renew({ lease_id: id, epoch: epochOf(epoch), ...(o.ttl !== undefined ? { ttl_secs: o.ttl } : {}) }),
        (l) => `${green('renewed')} ${leaseLine(l)}`,
      ),
    );

  common(lease.command('release <lease-id> <epoch>').description('end a lease you hold: the resource is free at once')).action((id: string, epoch: string, o: Common) =>
    run(
      o,
      (c) => c.lease.release({ lease_id: id, epoch: epochOf(epoch) }),
      (l) => `${green('released')} ${bold(l.lease_id)} · ${where(l)}`,
    ),
  );
}

function epochOf(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`the epoch is a whole number of at least 1 (as reserve printed it), not ${neutralise(v)}`);
  return n;
}
