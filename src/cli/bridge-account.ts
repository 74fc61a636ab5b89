// The account the stdio bridge speaks as. An MCP entry names its account, but one program may load
// another's entry: Copilot, in a trusted folder, loads the workspace's `.mcp.json`, which `m4a
// setup claude --project` wrote with Claude Code's account, and it wins over Copilot's own entry.
// When every setup of the named account was for another program than the one the bridge runs
// under, the bridge speaks as the account set up for its own program, or refuses: never as the
// other program's account.
import { resolve, sep } from 'node:path';
import { detectProvider, readCredentials } from './credentials.js';
import { readState, type SetupRecord } from './setup/state.js';

export type BridgeAccount = { account: string | undefined; note?: string } | { error: string };

const within = (cwd: string, dir: string): boolean => cwd === dir || cwd.startsWith(dir.endsWith(sep) ? dir : dir + sep);

export function bridgeAccount(named: string | undefined, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): BridgeAccount {
  const under = named === undefined ? undefined : detectProvider(env);
  if (named === undefined || under === undefined) return { account: named };
  let setups: SetupRecord[];
  try {
    setups = Object.values(readState(env).setups);
  } catch {
    return { account: named };
  }
  const programs = [...new Set(setups.filter((r) => r.account === named).map((r) => r.program as string))];
  // An account no setup recorded (made by hand), or one set up for this program too: as named.
  if (programs.length === 0 || programs.includes(under)) return { account: named };
  const here = resolve(cwd);
  const own = setups.filter((r) => r.program === under);
  // The project setup for this folder (the innermost), else the user's.
  const project = own.filter((r) => r.project_dir && within(here, r.project_dir)).sort((a, b) => b.project_dir!.length - a.project_dir!.length)[0];
  const chosen = project ?? own.find((r) => r.scope === 'user');
  let stored: string | undefined;
  try {
    stored = chosen && readCredentials(env).accounts[chosen.account]?.secret;
  } catch {
    // An unreadable credentials file: connecting says so, by name, as for any bridge.
    return { account: named };
  }
  if (chosen && stored)
    return { account: chosen.account, note: `the entry names ${named}, set up for ${programs.join(', ')}; running under ${under}, this bridge speaks as ${chosen.account}` };
  return {
    error: `wrong_program: the entry names account ${named}, set up for ${programs.join(', ')}, but this bridge runs under ${under}, for which no account is set up (cwd ${here}): run \`m4a setup ${under}\``,
  };
}
