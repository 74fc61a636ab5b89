#!/usr/bin/env node
// m4a / mail4agent: the command line. Start-up stays lean: heavy modules load only when used.
// Each command group is imported only for a command line that names it (command-groups.ts), and
// the build bundles this file (scripts/build-cli.mjs): a plain `m4a send` reads one file and runs
// the mail verbs, never setup, guard, tasks or the daemon.
import { Command, InvalidArgumentError } from 'commander';
import { groupsFor } from './command-groups.js';
import { EXIT } from './exit-codes.js';

const program = new Command();
program.name('m4a').description('a mailbox for AI agent sessions').showHelpAfterError();
program.exitOverride((err) => process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.usage));

const portArg = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('a port number from 0 to 65535');
  return n;
};

/** `--mail-alias LOCAL=ACCOUNT`, repeatable: one map of them. */
const aliasArg = (v: string, into: Record<string, string> = {}): Record<string, string> => {
  const m = /^([^=\s]+)=([^=\s]+)$/.exec(v);
  if (!m?.[1] || !m[2]) throw new InvalidArgumentError('LOCAL=ACCOUNT, such as support=claude');
  return { ...into, [m[1]]: m[2] };
};

program
  .command('serve')
  .description('run the daemon in the foreground (SQLite in the data directory by default)')
  .option('--data-dir <dir>', 'data directory (default $M4A_DATA_DIR or ~/.local/share/mail4agent)')
  .option('--port <port>', 'port on the loopback address (default 7341)', portArg)
  .option('--host <host>', 'loopback address to bind: 127.0.0.1 or ::1', '127.0.0.1')
  .option('--store <spec>', 'sqlite:/path/to/mail.db, postgres://user@host/db (shared by several daemons) or memory')
  .option('--auto', 'started on demand by a client (replaced after an upgrade once idle)')
  .option('--web-lan <addr:port>', 'also serve the browser mailbox (only it) on this LAN address: plain HTTP, trusted networks only')
  .option('--mail-domain <domain>', "every account's e-mail address is <account>@<domain>")
  .option('--smtp <addr:port>', 'receive e-mail on this address (needs --mail-domain): loopback unless --smtp-lan')
  .option('--smtp-lan', 'allow --smtp on an address that is not loopback: plain SMTP, trusted networks or behind an MTA only')
  .option('--mail-alias <local=account>', 'mail to <local>@<domain> goes to this account (repeatable)', aliasArg)
  .option('--smtp-max-bytes <n>', 'largest message --smtp takes, in bytes (default 10485760)', (v: string) => Number(v))
  .option('--smtp-relay <url>', 'send mail to email: addresses through this relay, smtp://host:port or smtps://host:port (needs --mail-domain)')
  .option('--smtp-relay-credentials <file>', "the relay's user (line 1) and password (line 2), a file of mode 0600 (or M4A_SMTP_RELAY_USER/M4A_SMTP_RELAY_PASSWORD)")
  .option('--email-per-hour <n>', 'e-mails an account may send per hour (default 20)', (v: string) => Number(v))
  .option('--no-stream', 'HTTP only: no stream door (the Unix socket m4a.sock in the data directory)')
  .option('--no-metrics', 'no GET /metrics (and nothing counted for it)')
  .action(
    async (o: {
      dataDir?: string;
      port?: number;
      host: string;
      store?: string;
      auto?: boolean;
      webLan?: string;
      stream: boolean;
      metrics: boolean;
      mailDomain?: string;
      smtp?: string;
      smtpLan?: boolean;
      mailAlias?: Record<string, string>;
      smtpMaxBytes?: number;
      smtpRelay?: string;
      smtpRelayCredentials?: string;
      emailPerHour?: number;
    }) => {
      if (!['127.0.0.1', '::1', 'localhost'].includes(o.host)) {
        process.stderr.write('m4a: serve binds to loopback only (127.0.0.1 or ::1)\n');
        process.exit(EXIT.usage);
      }
      const { serveForeground } = await import('../daemon/serve.js');
      const { mailAlias, ...rest } = o;
      await serveForeground({ ...rest, ...(mailAlias ? { mailAliases: mailAlias } : {}), host: o.host === 'localhost' ? '127.0.0.1' : o.host });
    },
  );

program
  .command('mcp')
  .description("MCP over stdio, forwarded to the daemon (starts it if needed); for agents' MCP configs")
  .option('--account <name>', "which account's secret to use (from the credentials file)")
  .option('--data-dir <dir>', "the daemon's data directory")
  .action(async (o: { account?: string; dataDir?: string }) => {
    const { runBridge } = await import('./mcp-bridge.js');
    await runBridge(o);
  });

program
  .command('doctor')
  .description("read-only checks: daemon, store, attestation, each agent's MCP entry and secret, what is left to do")
  .option('--json', 'JSON output')
  .option('--data-dir <dir>', "the daemon's data directory")
  .option('--project <dir>', 'the project whose agent configs to check (default: the current directory)')
  .option('--check-store', "also run SQLite's integrity_check over the whole store (read-only; safe while the daemon runs)")
  .option('--store <spec>', 'the store to check (default $M4A_STORE or <data dir>/mail.db, as m4a serve)')
  .action(async (o: { json?: boolean; dataDir?: string; project?: string; checkStore?: boolean; store?: string }) => {
    const { doctorReport } = await import('./doctor.js');
    const { checks, metrics } = await doctorReport(o);
    const failed = checks.some((c) => c.status === 'fail');
    if (o.json) (await import('./output.js')).printJson({ ok: !failed, checks, metrics });
    else {
      const mark = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' } as const;
      for (const c of checks) process.stdout.write(`${mark[c.status]}  ${c.name}: ${c.detail}${c.todo ? `\n      → ${c.todo}` : ''}\n`);
    }
    process.exit(failed ? EXIT.failed : EXIT.ok);
  });

program
  .command('capabilities')
  .description('what this build supports')
  .option('--json', 'JSON output (the default)')
  .action(async () => {
    const [{ capabilities }, { printJson }] = await Promise.all([import('./capabilities.js'), import('./output.js')]);
    printJson(capabilities());
  });

program
  .command('migrate-store')
  .description('copy a mailbox from one store to another (e.g. SQLite to PostgreSQL) without losing or doubling anything')
  .requiredOption('--from <spec>', 'the source, e.g. sqlite:/path/mail.db')
  .requiredOption('--to <spec>', 'the target, e.g. postgres://user@host/mail4agent')
  .option('--json', 'JSON output')
  .action(async (o: { from: string; to: string; json?: boolean }) => {
    const { runMigrateStore } = await import('../daemon/migrate-store.js');
    process.exitCode = await runMigrateStore(o);
  });

const own = program.commands.map((c) => c.name());
for (const group of await Promise.all(groupsFor(process.argv.slice(2), own).map((g) => g.load()))) group(program);

await program.parseAsync(process.argv);
