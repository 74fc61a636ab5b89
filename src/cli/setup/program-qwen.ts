// Qwen Code (shared/AGENT-INTEGRATIONS.md §11): Gemini's settings.json shape for MCP servers,
// Claude Code's shape for hooks (Stop, UserPromptSubmit; timeouts in seconds), QWEN.md for the guide.
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import type { JsonObject } from './programs.js';

/** Qwen's global directory: `$QWEN_HOME` (absolute, `~/…`, or relative to where Qwen starts,
 *  taken here as the current directory; empty means unset), else `~/.qwen`. */
export function qwenHome(env: NodeJS.ProcessEnv): string {
  const home = env.HOME || homedir();
  const set = env.QWEN_HOME;
  if (!set) return join(home, '.qwen');
  if (set === '~' || set.startsWith('~/')) return join(home, set.slice(1));
  return isAbsolute(set) ? set : resolve(set);
}

/** The directory holding settings.json: the project's `.qwen`, else Qwen's global directory.
 *  The guide (QWEN.md) goes in the project root or the global directory. */
export const qwenDirs = (env: NodeJS.ProcessEnv, project: string | null): { settings: string; guide: string } =>
  project
    ? { settings: join(project, '.qwen', 'settings.json'), guide: join(project, 'QWEN.md') }
    : { settings: join(qwenHome(env), 'settings.json'), guide: join(qwenHome(env), 'QWEN.md') };

/** What Qwen needs to use our tools unattended: `trust` (non-interactive calls are refused without
 *  it) and `alwaysLoadTools` (else the tools hide behind its tool_search). */
export const QWEN_UNATTENDED = { trust: true, alwaysLoadTools: true } as const;

/** The entry: stdio bridge, or streamable HTTP (`httpUrl`; `$VAR` is expanded when settings load). */
export function qwenEntry(cmd: JsonObject, url: string, stdio: boolean, tokenVar: string, timeout: number): JsonObject {
  return stdio ? { ...cmd, ...QWEN_UNATTENDED, timeout } : { httpUrl: url, headers: { Authorization: `Bearer \${${tokenVar}}` }, ...QWEN_UNATTENDED, timeout };
}
