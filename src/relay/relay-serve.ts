// `m4a relay serve`: checks the flags, opens the relay's store, serves until SIGINT or SIGTERM.
import { pino } from 'pino';
import { MailError } from '../wire/errors.js';
import type { Logger } from '../engine/log.js';
import { RelayState } from './relay-store.js';
import { isLoopback, parseListen, startRelay } from './relay-server.js';

export interface RelayServeFlags {
  listen?: string;
  tlsCert?: string;
  tlsKey?: string;
  behindProxy?: boolean;
  publicUrl?: string;
  dataDir?: string;
  store?: string;
}

const usage = (field: string, message: string): MailError => new MailError('malformed', message, { field, reason: 'usage' });

export function checkServeFlags(f: RelayServeFlags): { host: string; port: number; tls?: { cert: string; key: string } } {
  const { host, port } = parseListen(f.listen ?? '127.0.0.1:8443');
  if ((f.tlsCert === undefined) !== (f.tlsKey === undefined)) throw usage('tls-cert', '--tls-cert and --tls-key go together');
  if (f.tlsCert !== undefined && f.tlsKey !== undefined) {
    if (f.behindProxy) throw usage('behind-proxy', '--behind-proxy means the proxy holds the certificate: give it or --tls-cert, not both');
    return { host, port, tls: { cert: f.tlsCert, key: f.tlsKey } };
  }
  if (!f.behindProxy) throw usage('tls-cert', 'the relay serves HTTPS: give --tls-cert and --tls-key, or --behind-proxy with a loopback --listen');
  if (!isLoopback(host)) throw usage('listen', '--behind-proxy listens on loopback only (the proxy terminates TLS in front of it)');
  if (f.publicUrl === undefined) throw usage('public-url', '--behind-proxy needs --public-url: the https origin browsers reach the proxy at');
  return { host, port };
}

/** Serves until a signal; the exit code. */
export async function runRelayServe(f: RelayServeFlags): Promise<number> {
  let where: ReturnType<typeof checkServeFlags>;
  try {
    where = checkServeFlags(f);
  } catch (err) {
    process.stderr.write(`m4a relay serve: ${(err as MailError).code}: ${(err as Error).message}\n`);
    return 2;
  }
  const log: Logger = pino({ level: process.env.M4A_LOG_LEVEL ?? 'info' }, pino.destination(2));
  const state = await RelayState.open({ dataDir: f.dataDir, store: f.store });
  let relay;
  try {
    relay = await startRelay({ state, log, ...where, publicUrl: f.publicUrl });
  } catch (err) {
    await state.close();
    process.stderr.write(`m4a relay serve: ${(err as NodeJS.ErrnoException).code ?? 'failed'}: ${(err as Error).message}\n`);
    return 1;
  }
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  log.info({ code: 'relay_stopping' }, 'relay stopping');
  await relay.close();
  await state.close();
  return 0;
}
