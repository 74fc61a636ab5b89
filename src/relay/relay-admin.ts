// `m4a relay node …` and `m4a relay user …`, run on the relay's host: they open the relay's store
// directly (the same --data-dir/--store as serve), so they work while the relay runs, which reads
// its records per request. Tokens and passwords never appear on a command line or in a listing.
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { MailError } from '../wire/errors.js';
import { Password } from '../wire/web.js';
import { RelayState, parseName, type RelayRole } from './relay-store.js';

export interface StoreFlags {
  dataDir?: string;
  store?: string;
  json?: boolean;
}

const out = (s: string): void => void process.stdout.write(s.endsWith('\n') ? s : `${s}\n`);

/** Runs one admin action against the store; a named error is printed as `code: message`, exit 1. */
async function run(what: string, f: StoreFlags, act: (s: RelayState) => Promise<void>): Promise<number> {
  let state: RelayState | undefined;
  try {
    state = await RelayState.open({ dataDir: f.dataDir, store: f.store });
    await act(state);
    return 0;
  } catch (err) {
    const code = err instanceof MailError ? err.code : ((err as NodeJS.ErrnoException).code ?? 'failed');
    if (f.json) process.stderr.write(`${JSON.stringify(err instanceof MailError ? err.toBody() : { error: { code, message: (err as Error).message } })}\n`);
    else process.stderr.write(`m4a relay ${what}: ${code}: ${(err as Error).message}\n`);
    return 1;
  } finally {
    await state?.close().catch(() => undefined);
  }
}

/** Opens a new file 0600 for the token; one that exists is refused. */
function openNewFile(file: string): number {
  try {
    return openSync(file, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new MailError('already_exists', `${file} exists: the token is written to a new file only`, { field: 'token-file' });
    throw err;
  }
}

export function nodeAdd(id: string, f: StoreFlags & { tokenFile?: string }): Promise<number> {
  return run('node add', f, async (s) => {
    parseName('node', id);
    if (await s.node(id)) throw new MailError('already_exists', `node ${id} exists: remove it first to issue a new token`, { field: 'node' });
    // The file first, so a refused file leaves no node with a token nobody has.
    const fd = f.tokenFile !== undefined ? openNewFile(f.tokenFile) : undefined;
    let token: string;
    try {
      token = await s.addNode(id);
      if (fd !== undefined) writeSync(fd, `${token}\n`);
    } catch (err) {
      if (fd !== undefined && f.tokenFile !== undefined) {
        closeSync(fd);
        unlinkSync(f.tokenFile);
      }
      throw err;
    }
    if (fd !== undefined) {
      closeSync(fd);
      out(f.json ? JSON.stringify({ node: id, token_file: f.tokenFile }) : `node ${id} added; its token is in ${f.tokenFile} (shown nowhere else)`);
    } else out(f.json ? JSON.stringify({ node: id, token }) : token);
  });
}

export function nodeRemove(id: string, f: StoreFlags): Promise<number> {
  return run('node remove', f, async (s) => {
    await s.removeNode(parseName('node', id));
    out(f.json ? JSON.stringify({ node: id, removed: true }) : `node ${id} removed (a connected node is dropped within one heartbeat)`);
  });
}

export function nodeList(f: StoreFlags): Promise<number> {
  return run('node list', f, async (s) => {
    const nodes = await s.listNodes();
    if (f.json) return out(JSON.stringify({ nodes }));
    out(nodes.length === 0 ? 'no nodes' : nodes.map((n) => `${n.id}\tadded ${new Date(n.added_at).toISOString()}`).join('\n'));
  });
}

/** The password from --password-file, else as the CLI read it (stdin, or the terminal unechoed). */
export function userAdd(name: string, f: StoreFlags & { passwordFile?: string; password?: string }): Promise<number> {
  return run('user add', f, async (s) => {
    parseName('user', name);
    const raw = f.passwordFile !== undefined ? readFileSync(f.passwordFile, 'utf8') : (f.password ?? '');
    const pw = Password.safeParse(raw.replace(/\r?\n$/, ''));
    if (!pw.success) throw new MailError('malformed', `the password: ${pw.error.issues[0]?.message ?? 'invalid'}`, { field: 'password', reason: 'password' });
    await s.addUser(name, pw.data);
    out(f.json ? JSON.stringify({ user: name }) : `user ${name} added; grant a mailbox with m4a relay user grant ${name} --node ID --mailbox M --role owner|delegate`);
  });
}

export function userGrant(name: string, f: StoreFlags & { node: string; mailbox: string; role: string }): Promise<number> {
  return run('user grant', f, async (s) => {
    await s.grant(parseName('user', name), { node: f.node, mailbox: f.mailbox, role: f.role as RelayRole });
    out(f.json ? JSON.stringify({ user: name, node: f.node, mailbox: f.mailbox, role: f.role }) : `${name} now reaches ${f.mailbox} on node ${f.node} as ${f.role}`);
  });
}

export function userRevoke(name: string, f: StoreFlags): Promise<number> {
  return run('user revoke', f, async (s) => {
    const ended = await s.revoke(parseName('user', name));
    out(f.json ? JSON.stringify({ user: name, logins_ended: ended }) : `${name}'s grant is gone and ${ended} login(s) ended`);
  });
}

export function userList(f: StoreFlags): Promise<number> {
  return run('user list', f, async (s) => {
    const users = await s.listUsers();
    if (f.json) return out(JSON.stringify({ users }));
    out(users.length === 0 ? 'no users' : users.map((u) => `${u.user}\t${u.grant ? `${u.grant.role} of ${u.grant.mailbox} on ${u.grant.node}` : 'no grant'}`).join('\n'));
  });
}
