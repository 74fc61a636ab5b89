// GitHub Copilot CLI (shared/AGENT-INTEGRATIONS.md §11, checked against 1.0.102): MCP servers in
// `$COPILOT_HOME/mcp-config.json` (a trusted workspace: `.github/mcp.json`, and `.mcp.json`, which
// wins over both), hooks as whole files in `$COPILOT_HOME/hooks/` (`.github/hooks/`), skills in
// `$COPILOT_HOME/skills/` (`.github/skills/`). `$COPILOT_HOME` defaults to `~/.copilot`.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';

export const copilotHome = (env: NodeJS.ProcessEnv): string => env.COPILOT_HOME || join(env.HOME || homedir(), '.copilot');

export interface CopilotFiles {
  mcp: string;
  hooks: string;
  skill: string;
  /** The extension that wakes an idle session (copilot-extension.ts). */
  extension: string;
}

/** Where each file goes: the user's `$COPILOT_HOME`, or a project's `.github`. */
export function copilotFiles(env: NodeJS.ProcessEnv, project: string | null): CopilotFiles {
  if (project) {
    const gh = join(project, '.github');
    return {
      mcp: join(gh, 'mcp.json'),
      hooks: join(gh, 'hooks', 'mail4agent.json'),
      skill: join(gh, 'skills', 'mail4agent', 'SKILL.md'),
      extension: join(gh, 'extensions', 'mail4agent', 'extension.mjs'),
    };
  }
  const home = copilotHome(env);
  return {
    mcp: join(home, 'mcp-config.json'),
    hooks: join(home, 'hooks', 'mail4agent.json'),
    skill: join(home, 'skills', 'mail4agent', 'SKILL.md'),
    extension: join(home, 'extensions', 'mail4agent', 'extension.mjs'),
  };
}

/** The stdio entry: every tool allowed (`tools: ["*"]`), and a timeout (ms) that covers a 50 s
 *  inbox wait. Copilot passes its whole environment to the bridge, so no `env` is needed. */
export const copilotEntry = (cmd: { command: string; args: string[] }, timeoutMs: number): Record<string, unknown> => ({ type: 'local', ...cmd, tools: ['*'], timeout: timeoutMs });

export interface CopilotHook {
  /** agentStop, userPromptSubmitted or postToolUse. */
  event: string;
  command: string;
  timeoutSec: number;
}

/** The whole hooks file. agentStop prints `{"decision":"block","reason"}` (the reason becomes the
 *  next prompt); userPromptSubmitted and postToolUse print `{"additionalContext"}`. */
export function copilotHooksFile(hooks: CopilotHook[]): string {
  const byEvent: Record<string, unknown[]> = {};
  for (const h of hooks) (byEvent[h.event] ??= []).push({ type: 'command', bash: h.command, timeoutSec: h.timeoutSec });
  return `${JSON.stringify({ version: 1, hooks: byEvent }, null, 2)}\n`;
}

/** The m4a entries in a workspace's `.mcp.json` and `.github/mcp.json` that are not `ours`: in a
 *  trusted folder Copilot loads them, and `.mcp.json`'s wins over the user's entry. */
export function workspaceEntries(dir: string, ours: string | null): string[] {
  const out: string[] = [];
  for (const f of [join(dir, '.mcp.json'), join(dir, '.github', 'mcp.json')]) {
    if (f === ours || !existsSync(f)) continue;
    try {
      const v = parseJsonc(readFileSync(f, 'utf8')) as { mcpServers?: Record<string, unknown> } | undefined;
      if (v?.mcpServers?.m4a !== undefined) out.push(f);
    } catch {
      /* unreadable: nothing Copilot would load either */
    }
  }
  return out;
}
