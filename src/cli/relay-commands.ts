// m4a relay …: the self-hostable relay (docs/relay.md). `serve` runs it; `node` and `user` manage
// its store on the relay's host. The relay's code (src/relay/) is loaded only when one runs.
import type { Command } from 'commander';
import { readPassword } from './user-commands.js';

interface StoreFlags {
  dataDir?: string;
  store?: string;
  json?: boolean;
}

const exit = (code: number): void => {
  process.exitCode = code;
};

const storeOptions = (cmd: Command): Command =>
  cmd
    .option('--data-dir <dir>', "the relay's data directory (default $M4A_RELAY_DIR, else ~/.local/share/m4a-relay)")
    .option('--store <spec>', 'the store (default <data dir>/relay.db; postgres://… for several relays)')
    .option('--json', 'JSON output');

const admin = async (): Promise<typeof import('../relay/relay-admin.js')> => import('../relay/relay-admin.js');

export function registerRelay(program: Command): void {
  const relay = program.command('relay').description('the self-hostable relay: browsers anywhere reach the human mailboxes of daemons that dial out to it');
  relay
    .command('serve')
    .description('serve the relay: the browser mailbox over HTTPS, and the nodes’ WebSocket')
    .option('--listen <host:port>', 'where to listen', '127.0.0.1:8443')
    .option('--tls-cert <file>', 'the certificate chain (PEM)')
    .option('--tls-key <file>', 'its private key (PEM)')
    .option('--behind-proxy', 'plain HTTP on a loopback address: a reverse proxy in front terminates TLS')
    .option('--public-url <url>', 'the origin browsers use (Host and Origin must match it; default https://LISTEN)')
    .option('--data-dir <dir>', "the relay's data directory (default $M4A_RELAY_DIR, else ~/.local/share/m4a-relay)")
    .option('--store <spec>', 'the store (default <data dir>/relay.db; postgres://… for several relays)')
    .action(async (o: Record<string, string | boolean | undefined>) => exit(await (await import('../relay/relay-serve.js')).runRelayServe(o)));

  const node = relay.command('node').description('the daemons (nodes) that may connect');
  storeOptions(node.command('add <id>').description('add a node and make its token (printed once, or written 0600 to a new file)'))
    .option('--token-file <file>', 'write the token to this new file (mode 0600) instead of stdout')
    .action(async (id: string, o: StoreFlags & { tokenFile?: string }) => exit(await (await admin()).nodeAdd(id, o)));
  storeOptions(node.command('remove <id>').description('remove a node (a connected one is dropped)')).action(async (id: string, o: StoreFlags) =>
    exit(await (await admin()).nodeRemove(id, o)),
  );
  storeOptions(node.command('list').description('the nodes (never their tokens)')).action(async (o: StoreFlags) => exit(await (await admin()).nodeList(o)));

  const user = relay.command('user').description('the people who log in to the relay');
  storeOptions(user.command('add <name>').description('add a user; the password from --password-file, else stdin (or the terminal, unechoed)'))
    .option('--password-file <file>', 'a file holding the password (its first line)')
    .action(async (name: string, o: StoreFlags & { passwordFile?: string }) => {
      const password = o.passwordFile === undefined ? await readPassword({ passwordStdin: !process.stdin.isTTY }) : undefined;
      exit(await (await admin()).userAdd(name, { ...o, ...(password !== undefined ? { password } : {}) }));
    });
  storeOptions(user.command('grant <name>').description("give the user one node's human mailbox, as its owner or a delegate (replaces an earlier grant)"))
    .requiredOption('--node <id>', 'the node')
    .requiredOption('--mailbox <name>', 'the human mailbox on that node')
    .requiredOption('--role <role>', 'owner or delegate (a delegate’s mail carries via)')
    .action(async (name: string, o: StoreFlags & { node: string; mailbox: string; role: string }) => exit(await (await admin()).userGrant(name, o)));
  storeOptions(user.command('revoke <name>').description("take the user's grant away and end their logins")).action(async (name: string, o: StoreFlags) =>
    exit(await (await admin()).userRevoke(name, o)),
  );
  storeOptions(user.command('list').description('the users and their grants')).action(async (o: StoreFlags) => exit(await (await admin()).userList(o)));
}
