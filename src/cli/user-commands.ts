// m4a user …: people who use the browser mailbox (human accounts with a password), through the
// operator credential. The password is asked on the terminal without echo, or read from stdin with
// --password-stdin (scripts, tests); it never appears on a command line.
import { pathOf } from '../wire/operation-facts.js';
import type { Command } from 'commander';
import type * as A from '../wire/admin.js';
import { asOperator, operatorCommon, type OperatorOptions } from './admin-commands.js';
import { UsageError } from './connect.js';

interface Common extends OperatorOptions {
  passwordStdin?: boolean;
}

/** Reads the password: the first line of stdin, or twice from the terminal without echo. */
export async function readPassword(o: Common, prompt = 'Password: '): Promise<string> {
  if (o.passwordStdin) {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin as AsyncIterable<Buffer>) chunks.push(c);
    const line = Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
    if (!line) throw new UsageError('no password on stdin');
    return line;
  }
  if (!process.stdin.isTTY) throw new UsageError('stdin is not a terminal: pass the password with --password-stdin');
  const first = await askHidden(prompt);
  const again = await askHidden('Again: ');
  if (first !== again) throw new UsageError('the two passwords differ');
  return first;
}

function askHidden(prompt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    process.stderr.write(prompt);
    stdin.setRawMode(true);
    stdin.resume();
    let s = '';
    const done = (err?: Error): void => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(s);
    };
    const onData = (buf: Buffer): void => {
      for (const ch of buf.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003') return done(new UsageError('cancelled'));
        if (ch === '\u007f' || ch === '\b') s = [...s].slice(0, -1).join('');
        else if (ch >= ' ') s += ch;
      }
    };
    stdin.on('data', onData);
  });
}

const common = operatorCommon;

export function registerUser(program: Command): void {
  const user = program.command('user').description('people in the browser mailbox: human accounts with a password');

  common(user.command('create <id>').description('create a person (a human account that logs in at http://127.0.0.1:7341/)'))
    .option('--display-name <name>', 'the name shown beside the address')
    .option('--operator', 'may also manage accounts, rooms and listeners in the browser')
    .option('--password-stdin', 'read the password from the first line of stdin instead of asking')
    .action((id: string, o: Common & { displayName?: string; operator?: boolean }) =>
      asOperator(
        o,
        async (c) => {
          const password = await readPassword(o);
          return c.call<{ account: A.AccountOut }>(pathOf('user.create'), {
            id,
            password,
            ...(o.displayName ? { display_name: o.displayName } : {}),
            ...(o.operator ? { operator: true } : {}),
          });
        },
        (r) => `person ${r.account.id} (${r.account.label}) created: log in at the daemon's address in a browser`,
      ),
    );

  common(user.command('passwd <id>').description("set a person's password; their browser logins end"))
    .option('--password-stdin', 'read the password from the first line of stdin instead of asking')
    .action((id: string, o: Common) =>
      asOperator(
        o,
        async (c) => c.call<{ ok: true }>(pathOf('user.passwd'), { id, password: await readPassword(o, 'New password: ') }),
        () => `password of ${id} set; their browser logins ended`,
      ),
    );

  common(user.command('revoke-sessions <id>').description('end every browser login of a person')).action((id: string, o: Common) =>
    asOperator(
      o,
      (c) => c.call<{ revoked: number }>(pathOf('user.revoke-sessions'), { id }),
      (r) => `${r.revoked} browser login(s) of ${id} ended`,
    ),
  );
}
