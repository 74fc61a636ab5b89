// The ancestor rule: the session is the first process, walking up from the socket's holder, that is
// not transparent. Transparent processes are this package's own CLI, shells, and (only above an
// already transparent process) a package runner launching this package, git (running a hook) and
// Copilot CLI's extension host. Judged from the kernel's
// exe link and argv, never from a process title.
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { baseName, isBunBase, isNodeBase, isScriptHost, nodeScriptIndex } from './cmdline.js';
import { exeBase, readCmdline, readFacts } from './proc-facts.js';
import type { ProcessFacts, UnattestedReason } from './types.js';

const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'fish']);
const INITS = new Set(['systemd', 'init', 'tini', 'dumb-init', 'docker-init', 's6-svscan', 'runit']);
const RUNNER_SCRIPTS = new Set(['npm-cli.js', 'npx-cli.js', 'pnpm.cjs', 'pnpm.js']);
const MAX_STEPS = 32;

export function isShell(base: string): boolean {
  return SHELLS.has(base);
}

export function isInitLike(base: string): boolean {
  return INITS.has(base) || base.startsWith('containerd-shim');
}

function namesThisPackage(arg: string): boolean {
  return arg === 'mail4agent' || arg === 'm4a' || arg.startsWith('mail4agent@');
}

/** node running npm/npx/pnpm, or bun as `bunx`/`bun x`, with this package among the arguments. */
export function isRunner(base: string, argv: readonly string[]): boolean {
  let args: readonly string[];
  if (isNodeBase(base)) {
    const i = nodeScriptIndex(argv);
    if (i === -1 || !RUNNER_SCRIPTS.has(baseName(argv[i] ?? ''))) return false;
    args = argv.slice(i + 1);
  } else if (isBunBase(base)) {
    if (baseName(argv[0] ?? '') === 'bunx') args = argv.slice(1);
    else {
      const x = argv.findIndex((a, i) => i > 0 && !a.startsWith('-'));
      if (x === -1 || argv[x] !== 'x') return false;
      args = argv.slice(x + 1);
    }
  } else return false;
  return args.some(namesThisPackage);
}

/** The real path of the script node runs, resolved against the process's own cwd, or null. */
export function nodeScriptPath(pid: number, argv: readonly string[]): string | null {
  const script = argv[nodeScriptIndex(argv)];
  if (script === undefined || script === '') return null;
  // /proc/PID/cwd is a magic link: resolving through it works even when the cwd path is not ours.
  const abs = resolve(`/proc/${pid}/cwd`, script);
  for (const candidate of [abs, `${abs}.js`, `${abs}.mjs`, `${abs}.cjs`]) {
    try {
      return realpathSync(candidate);
    } catch {
      // try the next spelling node would accept
    }
  }
  return null;
}

export interface WalkContext {
  /** Real paths of `<packageRoot>/dist/cli/` and `<packageRoot>/src/cli/`, with trailing slash. */
  cliDirs: readonly string[];
}

export function cliDirsOf(packageRoot: string): string[] {
  let root: string;
  try {
    root = realpathSync(packageRoot);
  } catch {
    root = resolve(packageRoot);
  }
  return [`${root}/dist/cli/`, `${root}/src/cli/`];
}

/** Copilot CLI's extension host: its own binary running its extension bootstrap. */
export const isCopilotExtensionHost = (argv: readonly string[]): boolean => argv.length === 2 && /\/preloads\/extension_bootstrap\.mjs$/.test(argv[1] ?? '');

/** Whether a process is transparent; `runnerAllowed` only while walking up from a transparent one. */
export function isTransparent(p: ProcessFacts, ctx: WalkContext, runnerAllowed: boolean): boolean {
  const base = exeBase(p.exe);
  if (isShell(base)) return true;
  // git runs hooks (the commit guard's `m4a guard check`) on behalf of whoever ran it: above a
  // transparent process it is as transparent as the shell that ran it. The walk then finds the
  // agent (or the terminal) that committed, the same session that reserved the files.
  if (runnerAllowed && base === 'git') return true;
  // Copilot CLI runs each extension in a child of its own binary (`copilot
  // <pkg>/preloads/extension_bootstrap.mjs`): above a transparent process (the m4a the mail4agent
  // extension runs) it is part of the session, as git is.
  if (runnerAllowed && base === 'copilot' && isCopilotExtensionHost(readCmdline(p.pid))) return true;
  if (!isScriptHost(base)) return false;
  const argv = readCmdline(p.pid);
  const script = nodeScriptPath(p.pid, argv);
  if (script !== null && ctx.cliDirs.some((d) => script.startsWith(d))) return true;
  return runnerAllowed && isRunner(base, argv);
}

export type Walk = { ok: true; session: ProcessFacts; passed: ProcessFacts[] } | { ok: false; reason: UnattestedReason; foreignUid?: number };

/** From the socket's holder up past transparent processes. `passed` lists the transparent ones, the
 *  peer first. */
export function findSession(peer: ProcessFacts, ctx: WalkContext): Walk {
  const passed: ProcessFacts[] = [];
  let cur = peer;
  while (isTransparent(cur, ctx, cur !== peer)) {
    passed.push(cur);
    if (passed.length > MAX_STEPS) return { ok: false, reason: 'orphaned' };
    if (cur.ppid <= 1) return { ok: false, reason: 'orphaned' };
    const parent = readFacts(cur.ppid);
    // A parent younger than its child is a reused pid: the real parent is gone.
    if (parent === null || parent.startTime > cur.startTime) return { ok: false, reason: 'process_gone' };
    if (isInitLike(exeBase(parent.exe))) return { ok: false, reason: 'orphaned' };
    if (parent.uid !== peer.uid) return { ok: false, reason: 'foreign_chain', foreignUid: parent.uid };
    cur = parent;
  }
  return { ok: true, session: cur, passed };
}
