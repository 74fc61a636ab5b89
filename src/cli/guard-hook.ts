// The git pre-commit hook of `m4a guard install`: where it goes (git's own answer, so
// core.hooksPath and linked worktrees are honoured), what it says, and how it steps aside for a
// hook that was there first. The hook holds no secret: `m4a guard check` reads the credentials
// the way every m4a command does, from the environment git passes on.
import { spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, readFileSync, realpathSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** In every hook we write: how install and uninstall recognise theirs. */
export const HOOK_MARK = '# m4a-guard-hook v1';
/** Where a hook that was there before ours waits; ours runs it first. */
export const CHAINED = 'pre-commit.m4a-chained';

export class GuardSetupError extends Error {}

/** Runs git in `cwd`; its stdout, or a GuardSetupError with git's own words. */
export function git(args: string[], cwd: string): Buffer {
  const r = spawnSync('git', args, { cwd, maxBuffer: 256 * 1024 * 1024 });
  if (r.error) throw new GuardSetupError(`cannot run git: ${r.error.message}`);
  if (r.status !== 0) throw new GuardSetupError(`git ${args.join(' ')}: ${r.stderr.toString('utf8').trim() || `exit ${r.status}`}`);
  return r.stdout;
}

/** The hooks directory of the repository around `cwd`, as git runs hooks from it. */
export function hooksDir(cwd: string): string {
  const out = git(['rev-parse', '--git-path', 'hooks'], cwd).toString('utf8').trim();
  return resolve(cwd, out);
}

const sh = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** The running m4a as node + script, when it is a plain script node can run again. */
export function runningM4a(): { node: string; script: string } | null {
  const arg = process.argv[1];
  if (!arg) return null;
  try {
    const script = realpathSync(arg);
    return /\.(c|m)?js$/.test(script) ? { node: process.execPath, script } : null;
  } catch {
    return null;
  }
}

export function hookText(self: { node: string; script: string } | null): string {
  return [
    '#!/bin/sh',
    HOOK_MARK,
    '# Written by `m4a guard install`: refuses a commit that stages files another live session',
    '# reserved exclusively (M4A_GUARD=off bypasses it once). `m4a guard uninstall` removes it and',
    `# puts back the hook that was here before (kept beside it as ${CHAINED}).`,
    `chained="$(dirname "$0")/${CHAINED}"`,
    'if [ -x "$chained" ]; then "$chained" "$@" || exit $?; fi',
    // The m4a that installed the hook, then any m4a on PATH; without either, the commit goes on.
    ...(self ? [`node=${sh(self.node)}`, `script=${sh(self.script)}`, 'if [ -x "$node" ] && [ -f "$script" ]; then exec "$node" "$script" guard check; fi'] : []),
    'if command -v m4a >/dev/null 2>&1; then exec m4a guard check; fi',
    'echo "m4a guard: warning: m4a not found; the commit is not checked against file reservations" >&2',
    'exit 0',
    '',
  ].join('\n');
}

const ours = (file: string): boolean => {
  try {
    return lstatSync(file).isFile() && readFileSync(file, 'utf8').includes(HOOK_MARK);
  } catch {
    return false;
  }
};
const present = (file: string): boolean => {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
};

function writeHook(file: string, text: string): void {
  const tmp = `${file}.m4a-${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o755 });
  chmodSync(tmp, 0o755); // whatever the umask says
  renameSync(tmp, file);
}

export type InstallOutcome = { hook: string; action: 'installed' | 'updated' | 'unchanged'; chained?: string };

export function install(cwd: string, self = runningM4a()): InstallOutcome {
  const dir = hooksDir(cwd);
  mkdirSync(dir, { recursive: true });
  const hook = join(dir, 'pre-commit');
  const chained = join(dir, CHAINED);
  const text = hookText(self);
  const keeps = present(chained) ? { chained } : {};
  if (ours(hook)) {
    if (readFileSync(hook, 'utf8') === text && (lstatSync(hook).mode & 0o777) === 0o755) return { hook, action: 'unchanged', ...keeps };
    writeHook(hook, text);
    return { hook, action: 'updated', ...keeps };
  }
  if (present(hook)) {
    // Someone else's hook: it keeps running, first, from beside ours; a rename keeps its mode,
    // content and, for a link, the link itself, so uninstall can put it back exactly.
    if (present(chained)) throw new GuardSetupError(`${hook} is not ours and ${chained} exists already: move one of them away first`);
    renameSync(hook, chained);
    writeHook(hook, text);
    return { hook, action: 'installed', chained };
  }
  writeHook(hook, text);
  return { hook, action: 'installed', ...keeps };
}

export type UninstallOutcome = { hook: string; action: 'removed' | 'restored' | 'not_installed' | 'foreign' };

export function uninstall(cwd: string): UninstallOutcome {
  const dir = hooksDir(cwd);
  const hook = join(dir, 'pre-commit');
  const chained = join(dir, CHAINED);
  const had = present(hook);
  if (had && !ours(hook)) return { hook, action: 'foreign' };
  if (had) unlinkSync(hook);
  if (present(chained)) {
    renameSync(chained, hook);
    return { hook, action: 'restored' };
  }
  return { hook, action: had ? 'removed' : 'not_installed' };
}
