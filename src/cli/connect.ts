// From a CLI invocation to a ready client: find the data directory and the daemon (starting it
// if needed), choose the account's secret, and retire an older auto-started daemon once idle.
import { pathOf } from '../wire/operation-facts.js';
import { readFileSync } from 'node:fs';
import { DaemonUnreachable, MailClient } from '../client/http-client.js';
import { daemonSocket, daemonTarget, dataDirFrom, operatorToken } from './daemon-target.js';
import { ensureDaemon, probe, readDaemonInfo } from './autostart.js';
import { chooseAccount } from './credentials.js';

export const CLI_VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** How the CLI names itself in the stream door's hello. */
const CLIENT_NAME = `m4a/${CLI_VERSION}`;

export class UsageError extends Error {}

export interface Connected {
  client: MailClient;
  url: string;
  account: string | null;
  dataDir: string;
}

export interface ConnectOptions {
  account?: string;
  dataDir?: string;
}

export async function connect(o: ConnectOptions, env: NodeJS.ProcessEnv = process.env): Promise<Connected> {
  const choice = chooseAccount(o.account, env);
  if ('error' in choice) throw new UsageError(choice.error);
  const dataDir = dataDirFrom(o.dataDir, env);
  const url = await ensureDaemon(dataDir, env);
  void retireIfOlder(dataDir, url);
  return { client: new MailClient({ url, token: choice.secret, socket: daemonSocket(dataDir, url, env), clientName: CLIENT_NAME }), url, account: choice.account, dataDir };
}

/** Nothing listened: the request never reached a daemon, so it is safe to start one and retry. */
export function refused(err: unknown): boolean {
  return err instanceof DaemonUnreachable && (err.cause as NodeJS.ErrnoException | undefined)?.code === 'ECONNREFUSED';
}

/** The hot path (`m4a send` from an agent's bash tool): call the daemon at once, without a health
 *  probe first; only when nothing listens, start one and retry. */
export async function withDaemon<T>(o: ConnectOptions, fn: (c: MailClient) => Promise<T>, env: NodeJS.ProcessEnv = process.env): Promise<T> {
  const choice = chooseAccount(o.account, env);
  if ('error' in choice) throw new UsageError(choice.error);
  const dataDir = dataDirFrom(o.dataDir, env);
  let client = new MailClient({ ...daemonTarget(dataDir, env), token: choice.secret, clientName: CLIENT_NAME });
  try {
    const r = await fn(client);
    void retireIfOlder(dataDir, client.url);
    return r;
  } catch (err) {
    if (!refused(err) || env.M4A_URL) throw err;
    client.close();
    const url = await ensureDaemon(dataDir, env);
    client = new MailClient({ url, token: choice.secret, socket: daemonSocket(dataDir, url, env), clientName: CLIENT_NAME });
    return await fn(client);
  } finally {
    client.close();
  }
}

/** After an upgrade, an auto-started daemon of an older version is replaced once it is idle. */
async function retireIfOlder(dataDir: string, url: string): Promise<void> {
  try {
    const info = readDaemonInfo(dataDir);
    if (!info?.auto || info.version === CLI_VERSION || !olderThan(info.version, CLI_VERSION)) return;
    const h = await probe(url);
    if (!h || h.version === CLI_VERSION) return;
    const op = new MailClient({ url, token: operatorToken(dataDir) });
    await op.call(pathOf('daemon.stop'), { when: 'idle' }).catch(() => undefined);
    op.close();
  } catch {
    /* best effort: the old daemon keeps serving */
  }
}

export function olderThan(a: string, b: string): boolean {
  const pa = a.split(/[.-]/).map((x) => parseInt(x, 10) || 0);
  const pb = b.split(/[.-]/).map((x) => parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d < 0;
  }
  return false;
}
