// m4a wake … (the operator's delivery chains), m4a timer … (reminders), m4a receipts (delivery facts).
import type { Command } from 'commander';
import type { MailClient } from '../client/http-client.js';
import type { WakeChainOut, WakeSetInput } from '../wire/wake.js';
import { withDaemon, UsageError, type ConnectOptions } from './connect.js';
import { asOperator, operatorCommon, type OperatorOptions } from './admin-commands.js';
import { fail, printJson } from './output.js';
import { dim, table } from './format.js';

interface Common extends ConnectOptions {
  json?: boolean;
}

const common = (cmd: Command): Command =>
  cmd.option('--json', 'print the answer as JSON').option('--account <name>', "which account's secret to use").option('--data-dir <dir>', "the daemon's data directory");

async function print<T>(json: boolean | undefined, fn: () => Promise<T>, human: (r: T) => string): Promise<void> {
  try {
    const r = await fn();
    if (json) printJson(r);
    else process.stdout.write(`${human(r)}\n`);
  } catch (err) {
    fail(err, !!json);
  }
}

const asMail = <T>(o: Common, fn: (c: MailClient) => Promise<T>, human: (r: T) => string) => print(o.json, () => withDaemon(o, fn), human);

/** 90 (seconds), 30s, 45m, 2h, 1d. */
export function parseDuration(text: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(text.trim());
  if (!m) throw new UsageError(`not a duration: ${text} (use 90, 30s, 45m, 2h or 1d)`);
  const n = Number(m[1]) * ({ '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'] ?? 1);
  if (n < 1) throw new UsageError('a duration must be at least one second');
  return n;
}

type Step = WakeSetInput['steps'][number];

/** `hooks`, `codex=<ws://…|unix://…|spawn>`, `command=<JSON argv>`, `webhook=<url>`, `a2a=<card url>`, `opencode=<server url>`. */
export function parseStep(spec: string, o: { timeoutSecs?: string; allowRemote?: boolean; cwd?: string; env?: string[]; tokenFile?: string; passwordFile?: string }): Step {
  const env = o.env && o.env.length > 0 ? { env: o.env } : {};
  if (spec === 'hooks') return { kind: 'hooks' };
  const eq = spec.indexOf('=');
  const kind = eq < 0 ? spec : spec.slice(0, eq);
  const value = eq < 0 ? '' : spec.slice(eq + 1);
  switch (kind) {
    case 'codex':
    case 'codex-app-server':
      if (!value) throw new UsageError('codex needs where the app-server listens: codex=ws://127.0.0.1:PORT, codex=unix:///path or codex=spawn');
      return { kind: 'codex-app-server', listen: value, ...(value === 'spawn' ? env : {}) };
    case 'command': {
      let argv: unknown;
      try {
        argv = JSON.parse(value);
      } catch {
        throw new UsageError('command needs a JSON array of arguments: command=\'["claude","-p","--resume","{provider_session_id}","{wake_text}"]\'');
      }
      if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string')) throw new UsageError('command= must be a JSON array of strings (no shell)');
      return { kind: 'command', argv: argv, ...(o.timeoutSecs ? { timeout_secs: parseDuration(o.timeoutSecs) } : {}), ...(o.cwd ? { cwd: o.cwd } : {}), ...env };
    }
    case 'webhook':
      if (!value) throw new UsageError('webhook needs a URL: webhook=http://127.0.0.1:PORT/path');
      return { kind: 'webhook', url: value, ...(o.allowRemote ? { allow_remote: true } : {}) };
    case 'opencode':
      if (!value) throw new UsageError("opencode needs its server's URL: opencode=http://127.0.0.1:PORT (opencode serve --port PORT, or the TUI with --port PORT)");
      return { kind: 'opencode', url: value, ...(o.allowRemote ? { allow_remote: true } : {}), ...(o.passwordFile ? { password_file: o.passwordFile } : {}) };
    case 'a2a':
      if (!value) throw new UsageError("a2a needs the remote agent's card URL: a2a=http://127.0.0.1:PORT/.well-known/agent-card.json");
      return { kind: 'a2a', url: value, ...(o.allowRemote ? { allow_remote: true } : {}), ...(o.tokenFile ? { token_file: o.tokenFile } : {}) };
    default:
      throw new UsageError(`unknown step ${kind}: use hooks, codex=…, command=…, webhook=…, a2a=… or opencode=…`);
  }
}

const envOf = (s: { env?: string[] | undefined }): string => (s.env?.length ? ` env=${s.env.join(',')}` : '');
const describeStep = (s: WakeChainOut['steps'][number]): string =>
  s.kind === 'hooks'
    ? 'hooks'
    : s.kind === 'codex-app-server'
      ? `codex=${s.listen}${envOf(s)}`
      : s.kind === 'command'
        ? `command=${JSON.stringify(s.argv)}${envOf(s)}`
        : s.kind === 'webhook'
          ? `webhook=${s.url}`
          : s.kind === 'a2a'
            ? `a2a=${s.url}${s.allow_remote ? ' allow_remote' : ''}${s.token_file ? ` token_file=${s.token_file}` : ''}`
            : `opencode=${s.url}${s.allow_remote ? ' allow_remote' : ''}${s.password_file ? ` password_file=${s.password_file}` : ''}`;

const collect = (v: string, acc: string[]): string[] => [...acc, v];

export function registerWake(program: Command): void {
  const wake = program.command('wake').description('delivery chains: how the daemon wakes an agent when mail arrives (local operator only)');
  operatorCommon(
    wake
      .command('set <account>')
      .description('set the ordered chain of an account (or of one session with --session); the first step that succeeds ends it')
      .option(
        '--step <spec>',
        'hooks | codex=ws://127.0.0.1:PORT|unix:///PATH|spawn | command=<JSON argv> | webhook=<url> | a2a=<agent card url> | opencode=http://127.0.0.1:PORT (repeat, in order)',
        collect,
        [],
      )
      .option('--session <name>', 'only this session lineage (id, prefix, slug or alias)')
      .option('--rooms', 'room mail wakes this account too')
      .option('--debounce-ms <ms>', 'gather a burst into one wake (default 250)')
      .option('--timeout-secs <duration>', 'command steps: kill after this long (default 10m)')
      .option('--cwd <dir>', "command steps: working directory ({cwd} = the session's)")
      .option('--env <name>', "command and codex=spawn steps: a variable of the daemon's environment the program also gets (repeat)", collect, [])
      .option('--allow-remote', 'webhook, a2a and opencode steps: allow a non-loopback URL (https only)')
      .option('--password-file <path>', "opencode steps: an absolute path to a file holding the server's OPENCODE_SERVER_PASSWORD (read at each call)")
      .option('--token-file <path>', 'a2a steps: an absolute path to a file holding the bearer secret the remote agent wants (read at each call)'),
  ).action(
    (
      account: string,
      o: OperatorOptions & {
        step: string[];
        session?: string;
        rooms?: boolean;
        debounceMs?: string;
        timeoutSecs?: string;
        cwd?: string;
        env: string[];
        allowRemote?: boolean;
        tokenFile?: string;
        passwordFile?: string;
      },
    ) =>
      asOperator(
        o,
        async (c) => {
          if (o.step.length === 0) throw new UsageError('give at least one --step');
          const steps = o.step.map((s) => parseStep(s, o));
          return c.admin.wakeSet({
            account,
            steps,
            ...(o.session ? { session: o.session } : {}),
            ...(o.rooms ? { rooms: true } : {}),
            ...(o.debounceMs !== undefined ? { debounce_ms: Number(o.debounceMs) } : {}),
          });
        },
        (r) =>
          [
            `wake chain of ${r.chain.account}${r.chain.lineage ? `/${r.chain.lineage}` : ''}: ${r.chain.steps.map(describeStep).join(' → ')}`,
            ...(r.webhook_signing_key ? [`webhook signing key (shown once, store it now; receivers verify M4A-Signature with it):\n${r.webhook_signing_key}`] : []),
          ].join('\n'),
      ),
  );
  operatorCommon(wake.command('list').description('every delivery chain')).action((o: OperatorOptions) =>
    asOperator(
      o,
      (c) => c.admin.wakeList(),
      (r) =>
        r.chains.length === 0
          ? dim('no wake chains')
          : table([
              ['FOR', 'STEPS', 'ROOMS', 'DEBOUNCE'],
              ...r.chains.map((ch) => [
                ch.lineage ? `${ch.account}/${ch.lineage}` : ch.account,
                ch.steps.map(describeStep).join(' → '),
                ch.rooms ? 'yes' : 'no',
                `${ch.debounce_ms} ms`,
              ]),
            ]),
    ),
  );
  operatorCommon(wake.command('clear <account>').description('remove a chain').option('--session <name>', 'the chain of this session lineage')).action(
    (account: string, o: OperatorOptions & { session?: string }) =>
      asOperator(
        o,
        (c) => c.admin.wakeClear(account, o.session),
        () => `wake chain of ${account}${o.session ? `/${o.session}` : ''} removed`,
      ),
  );

  const timer = program.command('timer').description('durable reminders: they arrive as mail from mailbox and wake you like any mail');
  common(timer.command('set').description('set a reminder for this session (or the account with --for-account, or each member of a team with --team)'))
    .requiredOption('--in <duration>', '90, 30s, 45m, 2h, 1d')
    .requiredOption('--note <text>', 'what to be reminded of (the subject)')
    .option('--for-account', 'remind the whole account, not this session')
    .option('--team <name>', "one timer per other member of the team (a leader's timer.schedule_team grant)")
    .option('--include-self', 'with --team: remind yourself too')
    .action((o: Common & { in: string; note: string; forAccount?: boolean; team?: string; includeSelf?: boolean }) => {
      const team = o.team;
      if (team === undefined)
        return asMail(
          o,
          (c) => c.remind(parseDuration(o.in), o.note, !!o.forAccount),
          (t) => `timer ${t.id} for ${t.to} at ${t.due_at}: ${t.note}`,
        );
      return asMail(
        o,
        (c) => c.team.remind({ team, in_secs: parseDuration(o.in), note: o.note, ...(o.includeSelf ? { include_self: true } : {}) }),
        (r) => [`team ${r.team}: ${r.timers.length} timer${r.timers.length === 1 ? '' : 's'}`, ...r.timers.map((t) => `  ${t.id} for ${t.to} at ${t.due_at}`)].join('\n'),
      );
    });
  common(timer.command('list').description("your account's timers, soonest first")).action((o: Common) =>
    asMail(
      o,
      (c) => c.timers(),
      (r) => (r.timers.length === 0 ? dim('no timers') : table([['ID', 'DUE', 'FOR', 'NOTE'], ...r.timers.map((t) => [t.id, t.due_at, t.to, t.note])])),
    ),
  );
  common(timer.command('snooze <id>').description('move a timer').requiredOption('--in <duration>', 'from now: 90, 30s, 45m, 2h, 1d')).action(
    (id: string, o: Common & { in: string }) =>
      asMail(
        o,
        (c) => c.timerSnooze(id, parseDuration(o.in)),
        (t) => `timer ${t.id} now at ${t.due_at}`,
      ),
  );
  common(timer.command('clear <id>').description('remove a timer')).action((id: string, o: Common) =>
    asMail(
      o,
      (c) => c.timerClear(id),
      () => `timer ${id} cleared`,
    ),
  );

  common(program.command('receipts <message-id>').description('per recipient: stored, signalled (adapter, when), surfaced (first inbox read), acknowledged')).action(
    (id: string, o: Common) =>
      asMail(
        o,
        (c) => c.receipts(id),
        (r) =>
          table([
            ['RECIPIENT', 'STORED', 'SIGNALLED', 'SURFACED', 'ACKED'],
            ...r.receipts.map((x) => [
              x.recipient,
              x.stored_at,
              x.email ? `relay: ${x.email.state}` : x.signalled.length === 0 ? '-' : x.signalled.map((s) => `${s.adapter} ${s.ok ? 'ok' : 'failed'} ${s.at}`).join('; '),
              x.surfaced_at ?? '-',
              x.acked_at ?? '-',
            ]),
          ]) +
          // Mail to an e-mail address: its state with the relay in words ("sent" is not "delivered").
          r.receipts.map((x) => (x.email ? `\n${x.recipient}: ${x.email.detail}` : '')).join(''),
      ),
  );
}
