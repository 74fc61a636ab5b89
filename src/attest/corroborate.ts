// Allow-listed facts about the session: its cwd, which agent it is, its model and the agent's own
// session id. Only these values leave this file; the raw argv and environment never do.
import { baseName, cleanValue, isScriptHost, nodeScriptIndex } from './cmdline.js';
import { exeBase, readCmdline, readCwd, readEnvVars } from './proc-facts.js';
import { nodeScriptPath } from './transparent.js';
import type { Corroborated, ProcessFacts } from './types.js';

/** Variables an agent sets for the tools it spawns, and the provider each implies. */
const ENV_IDS: ReadonlyArray<readonly [string, string]> = [
  ['CLAUDE_CODE_SESSION_ID', 'claude'],
  ['CODEX_THREAD_ID', 'codex'],
  ['GEMINI_SESSION_ID', 'gemini'],
  ['QWEN_CODE_SESSION_ID', 'qwen'],
  ['COPILOT_AGENT_SESSION_ID', 'copilot'],
];
/** The variables read (wire/inherited-env.ts keeps the same names from every child mail4agent starts). */
export const ENV_NAMES = ENV_IDS.map(([n]) => n);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A plausible id token: no spaces, not an option. */
const TOKEN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** Provider from executable / script paths (exe, argv[0], script as written, script resolved). */
export function providerFromPaths(paths: readonly string[]): string | undefined {
  for (const p of paths) {
    if (p === '') continue;
    // `.exe` too: opencode's npm package runs its compiled binary as `opencode.exe` on every platform.
    const base = baseName(p).replace(/\.((c|m)?js|exe)$/, '');
    if (p.includes('claude-code') || base === 'claude') return 'claude';
    if (base === 'codex' || p.includes('@openai/codex')) return 'codex';
    if (base === 'gemini' || p.includes('@google/gemini-cli')) return 'gemini';
    if (base === 'cursor-agent' || base === 'cursor') return 'cursor';
    // omp is pi's fork: its package path holds pi's package name too, so it is checked first.
    if (base === 'omp' || p.includes('@oh-my-pi/')) return 'omp';
    // pi rewrites its command line to `pi` (process.title), so argv[0] is often all there is.
    if (base === 'pi' || p.includes('@mariozechner/pi-coding-agent')) return 'pi';
    // Qwen Code relaunches itself: the innermost `node …/@qwen-code/qwen-code/cli.js` is the session.
    if (base === 'qwen' || p.includes('@qwen-code/qwen-code/')) return 'qwen';
    if (base === 'opencode' || p.includes('/opencode-ai/')) return 'opencode';
    // The CLI's package or its native binary's (`@github/copilot-linux-x64/copilot`), not every
    // `@github/copilot-*` package (the editors' language server is another program).
    if (base === 'copilot' || /@github\/copilot(-(linux|darwin|win32)-[a-z0-9]+)?\//.test(p)) return 'copilot';
  }
  return undefined;
}

/** Value of `--name X` / `--name=X` (and the short aliases) in args, first occurrence. */
function option(args: readonly string[], names: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (a === '--') return undefined;
    for (const n of names) {
      if (a === n) {
        const v = args[i + 1];
        return v !== undefined && !v.startsWith('-') ? v : undefined;
      }
      if (n.startsWith('--') && a.startsWith(`${n}=`)) return a.slice(n.length + 1);
    }
  }
  return undefined;
}

/** Each program's options that name the conversation it resumes (or starts under a given id), and
 *  the shape an id has there: Gemini's `--resume latest` or `--resume 5`, Copilot's name or id
 *  prefix, or a prompt after a bare picker flag, is no id. Codex's `resume ID` is a subcommand. */
const ID_OPTIONS: Readonly<Record<string, { names: readonly string[]; shape: RegExp }>> = {
  claude: { names: ['--resume', '-r', '--session-id'], shape: TOKEN },
  gemini: { names: ['--resume', '-r', '--session-id'], shape: UUID },
  qwen: { names: ['--resume', '-r', '--session-id'], shape: UUID },
  copilot: { names: ['--resume', '-r', '--session-id'], shape: UUID },
  opencode: { names: ['--session', '-s'], shape: TOKEN },
};
/** Programs whose `-m` is `--model`. */
const SHORT_MODEL = new Set(['codex', 'gemini', 'qwen', 'opencode']);

/** model and provider session id from the agent's own arguments (after node's script, if any). */
export function argvFacts(provider: string | undefined, args: readonly string[]): Corroborated {
  const out: Corroborated = {};
  const model = option(args, SHORT_MODEL.has(provider ?? '') ? ['--model', '-m'] : ['--model']);
  if (model !== undefined) out.model = model;
  const ids = provider === undefined ? undefined : ID_OPTIONS[provider];
  if (ids !== undefined) {
    const id = option(args, ids.names);
    if (id !== undefined && ids.shape.test(id)) out.provider_session_id = id;
  } else if (provider === 'codex') {
    const i = args.indexOf('resume');
    const id = i === -1 ? undefined : args[i + 1];
    if (id !== undefined && UUID.test(id)) out.provider_session_id = id;
  }
  return out;
}

/** The agent id a helper's environment carries. A value the session itself already had was inherited
 *  from an outer agent, not set by this session, and is skipped; so is one naming a provider other
 *  than the one the session's executable shows, and one that is no id token (a helper the model runs
 *  can set anything, and `m4a open` puts the id on the resumed program's command line: `--yolo`). */
export function envFacts(
  helperEnvs: ReadonlyArray<ReadonlyMap<string, string>>,
  sessionEnv: ReadonlyMap<string, string>,
  provider: string | undefined,
): { provider: string; id: string } | undefined {
  for (const env of helperEnvs) {
    for (const [name, implied] of ENV_IDS) {
      const v = env.get(name);
      if (v === undefined || !TOKEN.test(v) || sessionEnv.get(name) === v) continue;
      if (provider !== undefined && provider !== implied) continue;
      return { provider: implied, id: v };
    }
  }
  return undefined;
}

export function corroborate(session: ProcessFacts, passed: readonly ProcessFacts[]): Corroborated {
  const argv = readCmdline(session.pid);
  const base = exeBase(session.exe);
  const scripted = isScriptHost(base);
  const si = scripted ? nodeScriptIndex(argv) : -1;
  const paths = [session.exe, argv[0] ?? ''];
  if (si !== -1) paths.push(argv[si] ?? '', nodeScriptPath(session.pid, argv) ?? '');
  const provider = providerFromPaths(paths);
  const args = scripted ? (si === -1 ? [] : argv.slice(si + 1)) : argv.slice(1);
  const facts = argvFacts(provider, args);

  // Nearest to the session first: the helper the session spawned directly speaks for it best.
  const helpers = [...passed].reverse().map((p) => readEnvVars(p.pid, ENV_NAMES));
  const fromEnv = envFacts(helpers, readEnvVars(session.pid, ENV_NAMES), provider);

  const out: Corroborated = {};
  const cwd = readCwd(session.pid);
  if (cwd !== '') out.cwd = cleanValue(cwd, 4096);
  const p = fromEnv?.provider ?? provider;
  if (p !== undefined) out.provider = p;
  const id = fromEnv?.id ?? facts.provider_session_id;
  if (id !== undefined) out.provider_session_id = cleanValue(id);
  if (facts.model !== undefined) out.model = cleanValue(facts.model);
  for (const k of ['provider_session_id', 'model'] as const) if (out[k] === '') delete out[k];
  return out;
}
