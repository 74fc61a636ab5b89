// `m4a serve`: the daemon in the foreground until SIGTERM or SIGINT, then a clean shutdown.
import { startDaemon, type DaemonOptions } from './daemon.js';
import { DataDirLocked, DataDirUnsafe } from './data-dir.js';
import { MailError } from '../wire/errors.js';

/** `m4a serve`'s exit codes when it cannot start, documented in docs/cli.md. */
export const SERVE_EXIT = { failed: 1, locked: 4, unsafeDataDir: 6, storeCorrupt: 7 } as const;

/** One line on stderr naming the reason (a stack only with M4A_LOG_LEVEL=debug or trace), then exit. */
function refuseStart(err: unknown, port: number | undefined): never {
  const e = err as NodeJS.ErrnoException;
  let code: number = SERVE_EXIT.failed;
  let line = `cannot start: ${e instanceof Error ? e.message : String(err)}`;
  if (err instanceof DataDirLocked) [code, line] = [SERVE_EXIT.locked, e.message];
  else if (e?.code === 'EADDRINUSE') [code, line] = [SERVE_EXIT.locked, `port ${port ?? 7341} is taken by another process`];
  else if (err instanceof DataDirUnsafe) [code, line] = [SERVE_EXIT.unsafeDataDir, `unsafe data directory: ${e.message}`];
  else if (err instanceof MailError) [code, line] = [err.code === 'store_corrupt' ? SERVE_EXIT.storeCorrupt : SERVE_EXIT.failed, `${err.code}: ${err.message}`];
  process.stderr.write(`m4a: ${line}\n`);
  if (['debug', 'trace'].includes(process.env.M4A_LOG_LEVEL ?? '') && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
  process.exit(code);
}

export async function serveForeground(o: DaemonOptions): Promise<void> {
  let d: Awaited<ReturnType<typeof startDaemon>> | undefined;
  let stopping = false;
  const stop = (): void => {
    if (stopping || !d) return;
    stopping = true;
    void d.close().then(() => process.exit(0));
  };
  const onStopRequest = (when: 'now' | 'idle'): void => {
    if (when === 'now') return void setImmediate(stop);
    // Idle: no request in flight and no wait parked (the request asking to stop has answered).
    const t = setInterval(() => {
      if (d?.idle()) {
        clearInterval(t);
        stop();
      }
    }, 200);
  };
  try {
    d = await startDaemon({ ...o, onStopRequest });
  } catch (err) {
    refuseStart(err, o.port);
  }
  // Before the line a supervisor waits for: a SIGTERM sent on reading it must find the handler.
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdout.write(`mail4agent listening on ${d.url} (data in ${d.dataDir})\n`);
  if (d.smtpUrl) process.stdout.write(`mail4agent receiving e-mail for @${d.engine.email.domain} on ${d.smtpUrl}\n`);
  if (d.smtpUrl && o.smtpLan)
    process.stderr.write(`m4a: WARNING: e-mail is taken on ${d.smtpUrl} from the network over plain SMTP (no TLS, no AUTH); put it behind your MTA or a firewall.\n`);
  if (d.webLanUrl)
    process.stderr.write(
      `m4a: WARNING: the browser mailbox is also served at ${d.webLanUrl} over plain HTTP (not encrypted).\n` +
        'Anyone on this network who learns a password can read and send mail as that person and instruct your agents.\n' +
        'Use it only on a trusted, password-protected network; never forward this port to the internet.\n',
    );
}
