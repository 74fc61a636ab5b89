// m4a setup / m4a unsetup: connect an agent program to the mailbox, and undo exactly that.
// Only commander's types (and the list of programs) load here; the work is imported when one of
// these commands runs.
import type { Command } from 'commander';
import { AGENT_PROGRAMS } from '../../wire/capabilities.js';
import type { ScopeFlags, SetupFlags } from './run.js';

/** claude, codex, … or omp */
const NAMED = `${AGENT_PROGRAMS.slice(0, -1).join(', ')} or ${AGENT_PROGRAMS.at(-1)}`;

const scoped = (cmd: Command): Command =>
  cmd
    .option('--project <dir>', 'the project in DIR (files committed with it, or local to it)')
    .option('--user', 'every project of this user (the default)')
    .option('--json', 'print the result as JSON');

export function registerSetup(program: Command): void {
  scoped(
    program
      .command('setup <program>')
      .description(
        `connect ${NAMED} to the mailbox: account, MCP server entry, agent guide, hooks that wake the agent; for pi and omp an extension, for opencode a plugin, that delivers mail live (safe to run again)`,
      ),
  )
    .option('--transport <transport>', 'stdio (the m4a mcp bridge, starts the daemon; the default) or http')
    .option('--account <name>', 'the account to use (default: the program name)')
    .option('--force', 'replace an m4a entry or guide file that setup did not write (unsetup puts it back)')
    .option('--no-hooks', 'install the MCP entry and the guide only, not the hooks that wake the agent (removes ones setup installed before)')
    .action(async (name: string, o: SetupFlags) => {
      const { runSetup } = await import('./run.js');
      await runSetup(name, o);
    });
  scoped(program.command('unsetup <program>').description(`remove what m4a setup added for ${NAMED} (the account and its secret stay)`)).action(
    async (name: string, o: ScopeFlags) => {
      const { runUnsetup } = await import('./run.js');
      await runUnsetup(name, o);
    },
  );
}
