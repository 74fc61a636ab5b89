// m4a connect …: the daemon's outbound link to a relay (docs/relay.md), local operator only. The
// node token is read from a file the user alone may read and sent once over the operator route;
// it is never taken on the command line and never printed.
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { MailClient } from '../client/http-client.js';
import { MailError } from '../wire/errors.js';
import { pathOf } from '../wire/operation-facts.js';
import type { ConnectStatus } from '../wire/relay-link-ops.js';
import { UsageError } from './connect.js';
import { asOperator, operatorCommon, type OperatorOptions } from './admin-commands.js';
import { dim } from './format.js';

interface LinkFlags extends OperatorOptions {
  serverUrl?: string;
  nodeId?: string;
  nodeTokenFile?: string;
  humanMailbox: string[];
  caFile?: string;
  noCaFile?: boolean;
}

/** The token file's first line; a file group or others may read is refused (chmod 600). */
export function readTokenFile(path: string): string {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch {
    throw new MailError('malformed', `cannot read the node token file ${path}`, { field: 'node_token_file', reason: 'unreadable' });
  }
  if ((mode & 0o077) !== 0)
    throw new MailError('malformed', `the node token file ${path} is readable by group or others: chmod 600 ${path}`, { field: 'node_token_file', reason: 'readable by others' });
  const token = readFileSync(path, 'utf8').split('\n')[0]?.trim() ?? '';
  if (!token) throw new MailError('malformed', `the node token file ${path} is empty`, { field: 'node_token_file', reason: 'empty' });
  return token;
}

const collect = (v: string, acc: string[]): string[] => [...acc, v];

const linkFlags = (cmd: Command, required: boolean): Command =>
  operatorCommon(cmd)
    .option('--server-url <url>', `the relay: wss://relay.example (ws:// only to this machine)${required ? '' : ' (default: as before)'}`)
    .option('--node-id <id>', 'this node as the relay knows it')
    .option('--node-token-file <file>', 'a file (chmod 600) holding the node token the relay gave')
    .option('--human-mailbox <account>', 'a human account the relay may act as (repeat)', collect, [])
    .option('--ca-file <file>', "a PEM file of the CA that signed the relay's certificate (default: the system's CAs)");

function body(o: LinkFlags, required: boolean): Record<string, unknown> {
  if (required) {
    const missing = [
      ['--server-url', o.serverUrl],
      ['--node-id', o.nodeId],
      ['--node-token-file', o.nodeTokenFile],
    ].filter(([, v]) => v === undefined);
    if (missing.length) throw new UsageError(`connect configure needs ${missing.map(([f]) => f).join(', ')}`);
    if (o.humanMailbox.length === 0) throw new UsageError('connect configure needs at least one --human-mailbox');
  }
  if (o.noCaFile && o.caFile !== undefined) throw new UsageError('give --ca-file or --no-ca-file, not both');
  return {
    ...(o.serverUrl !== undefined ? { server_url: o.serverUrl } : {}),
    ...(o.nodeId !== undefined ? { node_id: o.nodeId } : {}),
    ...(o.nodeTokenFile !== undefined ? { node_token: readTokenFile(o.nodeTokenFile) } : {}),
    ...(o.humanMailbox.length ? { human_mailboxes: o.humanMailbox } : {}),
    ...(o.caFile !== undefined ? { ca_file: resolve(o.caFile) } : o.noCaFile ? { ca_file: null } : {}),
  };
}

/** The status as a person reads it: connected or not, since, last error, round-trip time. */
export function describeStatus(s: ConnectStatus): string {
  if (!s.configured) return dim('relay link: not configured (m4a connect configure --server-url wss://… --node-id … --node-token-file … --human-mailbox …)');
  const state = s.connected
    ? `connected since ${s.since}${s.rtt_ms !== null ? ` (round trip ${s.rtt_ms} ms)` : ''}`
    : s.enabled
      ? `not connected${s.since ? ` since ${s.since}` : ''}, dialling again`
      : 'stopped (m4a connect start)';
  return [
    `relay link: ${state}`,
    ...(s.last_error && !s.connected ? [`  last error  ${s.last_error}`] : []),
    `  relay       ${s.server_url ?? ''}`,
    `  node        ${s.node_id ?? ''}`,
    `  mailboxes   ${s.human_mailboxes.join(', ') || dim('none')}`,
    `  ca file     ${s.ca_file ?? dim("the system's CAs")}`,
    `  token       ${s.token}`,
  ].join('\n');
}

export function registerRelayLink(program: Command): void {
  const connect = program.command('connect').description("this daemon's outbound link to a relay, so people reach their mailbox from anywhere (local operator only)");
  linkFlags(connect.command('configure').description('set the relay, node id, token and human mailboxes (then: m4a connect start)'), true).action((o: LinkFlags) =>
    asOperator(
      o,
      (c) => c.call<ConnectStatus>(pathOf('connect.configure'), body(o, true)),
      (s) => `${describeStatus(s)}${s.enabled ? '' : `\n${dim('start it with: m4a connect start')}`}`,
    ),
  );
  linkFlags(connect.command('update').description('change some settings; what is not given stays'), false)
    .option('--no-ca-file', "forget the CA file (trust the system's CAs)")
    .action((o: Omit<LinkFlags, 'caFile'> & { caFile?: string | false }) => {
      // commander folds --no-ca-file into caFile: false.
      const flags: LinkFlags = { ...o, caFile: typeof o.caFile === 'string' ? o.caFile : undefined, noCaFile: o.caFile === false };
      return asOperator(flags, (c) => c.call<ConnectStatus>(pathOf('connect.update'), body(flags, false)), describeStatus);
    });
  operatorCommon(connect.command('removeuser').description('stop offering one human mailbox through the relay'))
    .requiredOption('--human-mailbox <account>', 'the human account')
    .action((o: OperatorOptions & { humanMailbox: string }) =>
      asOperator(o, (c) => c.call<ConnectStatus>(pathOf('connect.removeuser'), { human_mailbox: o.humanMailbox }), describeStatus),
    );
  operatorCommon(connect.command('start').description('connect (and reconnect after restarts)')).action((o: OperatorOptions) =>
    asOperator(o, (c) => c.call<ConnectStatus>(pathOf('connect.start'), {}), describeStatus),
  );
  operatorCommon(connect.command('stop').description('disconnect (and stay disconnected after restarts)')).action((o: OperatorOptions) =>
    asOperator(o, (c) => c.call<ConnectStatus>(pathOf('connect.stop'), {}), describeStatus),
  );
  operatorCommon(connect.command('status').description('connected or not, since, last error, round-trip time')).action((o: OperatorOptions) =>
    asOperator(o, (c) => c.call<ConnectStatus>(pathOf('connect.status'), {}), describeStatus),
  );
}

/** m4a doctor's line for the relay link: nothing when it is not configured. */
export async function relayLinkCheck(url: string, token: string | null): Promise<{ name: string; status: 'ok' | 'warn'; detail: string; todo?: string } | null> {
  if (!token) return null;
  const c = new MailClient({ url, token, checkPortOwner: false });
  try {
    const s = await c.call<ConnectStatus>(pathOf('connect.status'), {});
    if (!s.configured) return null;
    if (!s.enabled) return { name: 'relay link', status: 'ok', detail: `stopped (${s.server_url ?? ''})`, todo: 'm4a connect start' };
    if (s.connected) return { name: 'relay link', status: 'ok', detail: `connected to ${s.server_url ?? ''} as ${s.node_id ?? ''} since ${s.since ?? ''}` };
    return { name: 'relay link', status: 'warn', detail: `not connected to ${s.server_url ?? ''}: ${s.last_error ?? 'dialling'}`, todo: 'm4a connect status' };
  } catch (err) {
    if (err instanceof MailError && err.code === 'unknown_route') return null; // a daemon from before the relay link
    return { name: 'relay link', status: 'warn', detail: `status unavailable: ${err instanceof MailError ? err.code : 'unreachable'}` };
  } finally {
    c.close();
  }
}
