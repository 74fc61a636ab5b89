// m4a admin …: the operator registry, through the operator credential in the data directory.
import { Argument, type Command } from 'commander';
import type { ContactPolicy } from '../wire/contacts.js';
import { POLICIES } from './contact-commands.js';
import { MailClient } from '../client/http-client.js';
import { daemonSocket, dataDirFrom, operatorToken } from './daemon-target.js';
import { ensureDaemon } from './autostart.js';
import { UsageError } from './connect.js';
import { fail, printJson, printText, table } from './output.js';
import { registerAdminTeam } from './team-commands.js';
import { registerAdminRetention } from './retention-commands.js';

/** The options every operator command takes (see `operatorCommon`). */
export interface OperatorOptions {
  json?: boolean;
  dataDir?: string;
}
type Common = OperatorOptions;

/** The operator's client; the daemon is started first if needed (it writes the credential). */
export async function operatorClient(dataDirFlag: string | undefined): Promise<MailClient> {
  const dir = dataDirFrom(dataDirFlag);
  const url = await ensureDaemon(dir);
  return new MailClient({ url, token: operatorToken(dir), socket: daemonSocket(dir, url) });
}

/** Runs `fn` with the operator's client and prints its answer (JSON with --json, else `human(r)`);
 *  a failure goes to `fail` (its message and exit code). Used by m4a admin, user and wake. */
export async function asOperator<T>(o: OperatorOptions, fn: (c: MailClient) => Promise<T>, human: (r: T) => string): Promise<void> {
  let c: MailClient | undefined;
  try {
    c = await operatorClient(o.dataDir);
    const r = await fn(c);
    if (o.json) printJson(r);
    else printText(human(r));
  } catch (err) {
    fail(err, !!o.json);
  } finally {
    c?.close();
  }
}

/** --json and --data-dir, the options of an operator command. */
export const operatorCommon = (cmd: Command): Command => cmd.option('--json', 'print the answer as JSON').option('--data-dir <dir>', "the daemon's data directory");
const common = operatorCommon;
const deleted = (n: number): string => `${n} message${n === 1 ? '' : 's'}`;

export function registerAdmin(program: Command): void {
  const admin = program.command('admin').description('operator registry: accounts, rooms, members, listeners');
  const account = admin.command('account').description('accounts and their secrets');

  common(account.command('add <id>').description('create an account; prints its secret once'))
    .option('--kind <kind>', 'agent, human or service', 'agent')
    .option('--label <label>', 'display label')
    .option('--bind-provider <provider>', 'accept only sessions of this provider (claude, codex, …)')
    .option('--urgent', 'may send urgent mail')
    .option('--operator', 'may use the operator registry')
    .option('--no-send', 'may not send')
    .option('--no-read', 'may not read')
    .action(
      (
        id: string,
        o: Common & { kind: 'agent' | 'human' | 'service'; label?: string; bindProvider?: string; urgent?: boolean; operator?: boolean; send: boolean; read: boolean },
      ) =>
        asOperator(
          o,
          (c) =>
            c.admin.accountAdd({
              id,
              kind: o.kind,
              ...(o.label ? { label: o.label } : {}),
              ...(o.bindProvider ? { bind_provider: o.bindProvider } : {}),
              permissions: { send: o.send, read: o.read, urgent: !!o.urgent, operator: !!o.operator },
            }),
          (r) => `account ${r.account.id} created. Its secret (shown once, store it now):\n${r.secret}`,
        ),
    );
  common(account.command('rotate <id>').description('issue a new secret; the old one stops working')).action((id: string, o: Common) =>
    asOperator(
      o,
      (c) => c.admin.accountRotate(id),
      (r) => `account ${r.account.id}: new secret (shown once):\n${r.secret}`,
    ),
  );
  common(account.command('remove <id>').description('remove an account and delete its mail, sessions, wake chains and timers')).action((id: string, o: Common) =>
    asOperator(
      o,
      (c) => c.admin.accountRemove(id),
      (r) => `account ${id} removed; ${deleted(r.deleted_messages)} delivered to it deleted (an account added again as ${id} starts empty)`,
    ),
  );
  common(account.command('list').description('every account')).action((o: Common) =>
    asOperator(
      o,
      (c) => c.admin.accountList(),
      (r) =>
        table([
          ['ID', 'KIND', 'PERMISSIONS', 'BOUND TO'],
          ...r.accounts.map((a) => [
            a.id,
            a.kind,
            Object.entries(a.permissions)
              .filter(([, v]) => v)
              .map(([k]) => k)
              .join(','),
            a.bind_provider ?? '-',
          ]),
        ]),
    ),
  );

  const room = admin.command('room').description('rooms and their members');
  common(room.command('add <name>').description('create a room (members only may post, unless --open)'))
    .option('--everyone', 'every account, present and future, is a member (the only broadcast)')
    .option('--open', 'anyone may post, not only members')
    .action((name: string, o: Common & { everyone?: boolean; open?: boolean }) =>
      asOperator(
        o,
        (c) => c.admin.roomAdd(name, { everyone: !!o.everyone, open: !!o.open }),
        () => `room #${name} created${o.everyone ? ' (every account is a member)' : ''}${o.open ? ' (anyone may post)' : ' (members only may post)'}`,
      ),
    );
  common(room.command('set <name>').description('open a room to posts from anyone, or close it to members only'))
    .option('--open', 'anyone may post')
    .option('--closed', 'members only may post')
    .action((name: string, o: Common & { open?: boolean; closed?: boolean }) => {
      if (!!o.open === !!o.closed) fail(new UsageError('room set: say either --open or --closed'), !!o.json);
      return asOperator(
        o,
        (c) => c.admin.roomSet(name, !!o.open),
        () => `room #${name}: ${o.open ? 'anyone may post' : 'members only may post'}`,
      );
    });
  common(room.command('remove <name>').description('remove a room and delete its mail')).action((name: string, o: Common) =>
    asOperator(
      o,
      (c) => c.admin.roomRemove(name),
      (r) => `room #${name} removed; ${deleted(r.deleted_messages)} deleted (a room created again as #${name} starts empty)`,
    ),
  );
  common(room.command('list').description('every room with its members')).action((o: Common) =>
    asOperator(
      o,
      (c) => c.admin.roomList(),
      (r) => table([['ROOM', 'POSTS', 'MEMBERS'], ...r.rooms.map((x) => [`#${x.name}`, x.open ? 'anyone' : 'members', x.everyone ? 'everyone' : x.members.join(', ') || '-'])]),
    ),
  );
  const member = room.command('member').description('room membership');
  common(member.command('add <room> <account>').description('grant membership')).action((roomName: string, acc: string, o: Common) =>
    asOperator(
      o,
      (c) => c.admin.memberAdd(roomName, acc),
      () => `${acc} is now a member of #${roomName}`,
    ),
  );
  common(member.command('remove <room> <account>').description('revoke membership')).action((roomName: string, acc: string, o: Common) =>
    asOperator(
      o,
      (c) => c.admin.memberRemove(roomName, acc),
      () => `${acc} is no longer a member of #${roomName}`,
    ),
  );

  const policy = admin.command('policy').description("an account's contact policy: who may write to it");
  common(policy.command('set <account>').description("set an account's contact policy (people and reminders always reach it)"))
    .addArgument(new Argument('<policy>', 'open, contacts_only or block_all').choices(POLICIES))
    .action((acc: string, p: ContactPolicy, o: Common) =>
      asOperator(
        o,
        (c) => c.admin.policySet(acc, p),
        (r) => `${r.account}: policy ${r.policy}`,
      ),
    );

  const listener = admin.command('listener').description('doorbell URLs rung when mail arrives');
  common(listener.command('set <account> <url>').description('set a loopback URL for an account')).action((acc: string, url: string, o: Common) =>
    asOperator(
      o,
      (c) => c.admin.listenerSet(acc, url),
      () => `listener for ${acc} set to ${url}`,
    ),
  );
  common(listener.command('remove <account>').description("clear an account's listener")).action((acc: string, o: Common) =>
    asOperator(
      o,
      (c) => c.admin.listenerRemove(acc),
      () => `listener for ${acc} removed`,
    ),
  );

  registerAdminTeam(admin);
  registerAdminRetention(admin);
}
