// m4a import interagentmail [DIR] and m4a import agent-mail DB: the source is read and checked
// here (interagentmail-files.ts, agent-mail-db.ts) before the daemon is asked for anything, then
// written as the local operator (import-mail-run.ts). Safe to run again: a second run adds nothing.
import type { Command } from 'commander';
import { MailError } from '../wire/errors.js';
import { neutralise } from '../wire/text.js';
import { asOperator, operatorCommon, type OperatorOptions } from './admin-commands.js';
import { UsageError } from './connect.js';
import { fail } from './output.js';
import { describeMailImport, runMailImport, type MailPlan } from './import-mail-run.js';

async function readOrFail(o: OperatorOptions, read: () => MailPlan | Promise<MailPlan>): Promise<MailPlan> {
  try {
    return await read();
  } catch (err) {
    // A system error names the path it failed on: shown like every other name from the source.
    fail(err instanceof MailError || err instanceof UsageError ? err : new Error(neutralise(err instanceof Error ? err.message : String(err))), !!o.json);
  }
}

/** `--json` and `--data-dir` also where commander gave them to `import` itself (it takes options
 *  of its own, and a parent's options are recognised after a subcommand too). */
export const withParents = (own: OperatorOptions, cmd: Command): OperatorOptions => ({ ...cmd.optsWithGlobals<OperatorOptions>(), ...own });

export function registerMailImports(imp: Command): void {
  operatorCommon(
    imp
      .command('interagentmail [dir]')
      .description("InterAgentMail's mailboxes (inbox, sent, archive), teams and timers (default $INTERAGENTMAIL_HOME or ~/.local/share/interagentmail); safe to run again"),
  ).action(async (dir: string | undefined, own: OperatorOptions, cmd: Command) => {
    const o = withParents(own, cmd);
    const { defaultInterAgentMailDir, readInterAgentMailDir } = await import('./interagentmail-files.js');
    const plan = await readOrFail(o, () => readInterAgentMailDir(dir ?? defaultInterAgentMailDir()));
    await asOperator(o, (c) => runMailImport(c, plan, 'codex'), describeMailImport);
  });
  operatorCommon(imp.command('agent-mail <db>').description("MCP Agent Mail's SQLite database (projects, agents, messages, read and ack state); safe to run again")).action(
    async (db: string, own: OperatorOptions, cmd: Command) => {
      const o = withParents(own, cmd);
      const { readAgentMailDb } = await import('./agent-mail-db.js');
      const plan = await readOrFail(o, () => readAgentMailDb(db));
      await asOperator(o, (c) => runMailImport(c, plan), describeMailImport);
    },
  );
}
