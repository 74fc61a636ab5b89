// `m4a hook <program>-<event>`: the hooks agent programs run, reading the program's JSON on stdin
// and printing the JSON it expects. They tell the agent about mail new since the last notice. A
// hook never breaks the agent: on any failure it prints nothing and exits 0.
import type { Command } from 'commander';
import { wakeText } from '../wire/wake-text.js';
import type { NoticeResponse } from '../wire/hooks.js';
import { LIVE_WAIT_SECS } from '../wire/capabilities.js';
import { withDaemon } from './connect.js';
import { printJson, EXIT, fail } from './output.js';

type Kind = 'stop' | 'context' | 'live';

interface HookSpec {
  kind: Kind;
  event: 'stop' | 'prompt' | 'tool' | 'live';
  /** What to print when there is news (stop: keep going; context: a line of context). */
  render(text: string, input: Record<string, unknown>): unknown;
  /** What to print when there is nothing (Codex expects JSON on exit 0). */
  quiet?: unknown;
}

// Output contracts: shared/AGENT-INTEGRATIONS.md §2.3–2.4 (Claude Code), §4.3 (Codex),
// §5.3 (Gemini CLI), §6.2 (Cursor), §11 (Copilot CLI).
const HOOKS: Record<string, HookSpec> = {
  'claude-stop': { kind: 'stop', event: 'stop', render: (reason) => ({ decision: 'block', reason }) },
  'claude-prompt': {
    kind: 'context',
    event: 'prompt',
    render: (text, input) => ({
      hookSpecificOutput: { hookEventName: typeof input.hook_event_name === 'string' ? input.hook_event_name : 'UserPromptSubmit', additionalContext: text },
    }),
  },
  'claude-tool': { kind: 'context', event: 'tool', render: (text) => ({ hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: text } }) },
  'codex-stop': { kind: 'stop', event: 'stop', render: (reason) => ({ decision: 'block', reason }), quiet: {} },
  'codex-prompt': {
    kind: 'context',
    event: 'prompt',
    render: (text, input) => ({
      hookSpecificOutput: { hookEventName: typeof input.hook_event_name === 'string' ? input.hook_event_name : 'UserPromptSubmit', additionalContext: text },
    }),
  },
  'gemini-after-agent': { kind: 'stop', event: 'stop', render: (reason) => ({ decision: 'deny', reason }), quiet: {} },
  'gemini-before-agent': { kind: 'context', event: 'prompt', render: (text) => ({ hookSpecificOutput: { hookEventName: 'BeforeAgent', additionalContext: text } }), quiet: {} },
  'cursor-stop': { kind: 'stop', event: 'stop', render: (text) => ({ followup_message: text }), quiet: {} },
  // Copilot CLI (§11): agentStop's block makes the reason the next prompt; userPromptSubmitted and
  // postToolUse add `additionalContext` (to the prompt, to the tool's result).
  'copilot-stop': { kind: 'stop', event: 'stop', render: (reason) => ({ decision: 'block', reason }) },
  'copilot-prompt': { kind: 'context', event: 'prompt', render: (text) => ({ additionalContext: text }) },
  'copilot-tool': { kind: 'context', event: 'tool', render: (text) => ({ additionalContext: text }) },
  // Not a Copilot hook: run by the extension setup installs, which prompts an idle session with the text.
  'copilot-live': { kind: 'live', event: 'live', render: (text) => ({ text }), quiet: {} },
};
// Qwen Code's hooks are Claude Code's shape (§11): the same contract, named for the provider.
HOOKS['qwen-stop'] = HOOKS['claude-stop']!;
HOOKS['qwen-prompt'] = HOOKS['claude-prompt']!;

export const HOOK_NAMES = Object.keys(HOOKS);

/** The program's JSON kept from stdin: a tool hook's carries the tool's result, of any size, and
 *  only small fields are read. Past this, the rest is drained (no broken pipe) and not parsed. */
const STDIN_MAX = 1 << 20;

async function readStdin(): Promise<Record<string, unknown>> {
  if (process.stdin.isTTY) return {};
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of process.stdin as AsyncIterable<Buffer>) {
    size += c.length;
    if (size <= STDIN_MAX) chunks.push(c);
  }
  if (size > STDIN_MAX) return {};
  try {
    const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** How long a Stop hook in listen mode may wait in all (the program's hook timeout must exceed it). */
const listenBudgetMs = (): number => Math.max(0, Number(process.env.M4A_LISTEN_SECS ?? 540)) * 1000;

export async function runHook(name: string, o: { account?: string }): Promise<void> {
  const spec = HOOKS[name];
  if (!spec) {
    process.stderr.write(`m4a hook: unknown hook ${name} (known: ${HOOK_NAMES.join(', ')})\n`);
    process.exit(EXIT.usage);
  }
  const input = await readStdin();
  // A live wait outlives nothing: when the extension that ran it is gone (reparented), it ends
  // rather than take mail for a session that is over.
  if (spec.kind === 'live') {
    const parent = process.ppid;
    setInterval(() => process.ppid !== parent && process.exit(EXIT.ok), 1000).unref();
  }
  try {
    const r = await withDaemon(o, async (c): Promise<NoticeResponse> => {
      // Live: one parked wait for mail this session was not shown (the extension runs it again).
      let n = await c.notice(spec.kind === 'live' ? { event: 'live', wait_secs: LIVE_WAIT_SECS } : { event: spec.event });
      // Listen mode: an idle session waits here for mail instead of going idle.
      const deadline = Date.now() + listenBudgetMs();
      while (spec.kind === 'stop' && n.listening && n.mail.length === 0 && Date.now() < deadline) {
        n = await c.notice({ event: 'stop', wait_secs: Math.min(55, Math.max(1, (deadline - Date.now()) / 1000)) });
      }
      return n;
    });
    const news = spec.kind === 'stop' ? r.block : r.mail.length > 0;
    if (news) printJson(spec.render(wakeText(r.mail, r.more), input));
    else if (spec.quiet !== undefined) printJson(spec.quiet);
  } catch (err) {
    // Never fail the agent: say why on stderr (its debug log), print what "nothing" looks like.
    process.stderr.write(`m4a hook ${name}: ${err instanceof Error ? err.message : String(err)}\n`);
    if (spec.quiet !== undefined) printJson(spec.quiet);
  }
  process.exit(EXIT.ok);
}

export function registerHooks(program: Command): void {
  program
    .command('hook <name>')
    .description(`run as an agent program's hook: ${HOOK_NAMES.join(', ')}`)
    .option('--account <name>', "which account's secret to use")
    .action(async (name: string, o: { account?: string }) => runHook(name, o));

  program
    .command('listen <on|off>')
    .description('listen mode for this session: its Stop hook waits for mail instead of letting the agent go idle')
    .option('--account <name>', "which account's secret to use")
    .option('--json', 'print the answer as JSON')
    .action(async (state: string, o: { account?: string; json?: boolean }) => {
      if (state !== 'on' && state !== 'off') {
        process.stderr.write('m4a listen: say on or off\n');
        process.exit(EXIT.usage);
      }
      try {
        const r = await withDaemon(o, (c) => c.listen(state === 'on'));
        if (o.json) printJson(r);
        else process.stdout.write(`listen mode ${r.listening ? 'on' : 'off'} for ${r.address}\n`);
      } catch (err) {
        fail(err, !!o.json);
      }
    });
}
