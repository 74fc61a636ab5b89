// What `m4a setup copilot` tells the user: trust for a project, and the pitfall of §11 — in a
// trusted folder Copilot also loads the workspace's `.mcp.json` (Claude Code's, written by `m4a
// setup claude --project`), whose m4a entry wins over Copilot's own and names Claude's account.
import { join } from 'node:path';
import type { Change } from './plan.js';
import { workspaceEntries } from './program-copilot.js';
import { readState } from './state.js';

export function copilotTodo(dir: string | null, changes: Change[], env: NodeJS.ProcessEnv): string[] {
  const todo: string[] = [];
  const ours = changes[0]?.path ?? null;
  if (dir)
    todo.push(
      `Copilot loads ${join(dir, '.github')} (mcp.json, hooks, skills) only in a trusted folder: trust ${dir} when Copilot asks (copilot -p needs --trust-folder or a folder trusted before).`,
    );
  const extension = changes.find((c) => c.path.endsWith('extension.mjs') && c.after !== null)?.path;
  if (extension)
    todo.push(
      `${extension} brings mail to an idle session; Copilot runs extensions only with experimental features on: start it once with \`copilot --experimental\` (it keeps the setting). Without it, mail reaches a session at the end of its turn (agentStop).`,
    );
  // Workspaces that hold another m4a entry: this project, and the projects set up for other programs.
  const dirs = new Set<string>(dir ? [dir] : []);
  for (const r of Object.values(readState(env).setups)) if (r.project_dir && r.program !== 'copilot') dirs.add(r.project_dir);
  const foreign = [...dirs].flatMap((d) => workspaceEntries(d, ours));
  if (foreign.length)
    todo.push(
      `In a trusted folder Copilot also loads ${foreign.join(' and ')}, whose m4a entry wins over Copilot's own: there the bridge sees it runs under Copilot and speaks as the account set up for Copilot (it refuses with wrong_program when there is none), never as the other program's account.`,
    );
  return todo;
}
