// `m4a serve`: the daemon in the foreground until SIGTERM or SIGINT, then a clean shutdown.
import { startDaemon, type DaemonOptions } from './daemon.js';
import { DataDirLocked } from './data-dir.js';

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
    if (err instanceof DataDirLocked) {
      process.stderr.write(`m4a: ${err.message}\n`);
      process.exit(4);
    }
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      process.stderr.write(`m4a: port ${o.port ?? 7341} is taken by another process\n`);
      process.exit(4);
    }
    throw err;
  }
  process.stdout.write(`mail4agent listening on ${d.url} (data in ${d.dataDir})\n`);
  if (d.webLanUrl)
    process.stderr.write(
      `m4a: WARNING: the browser mailbox is also served at ${d.webLanUrl} over plain HTTP (not encrypted).\n` +
        'Anyone on this network who learns a password can read and send mail as that person and instruct your agents.\n' +
        'Use it only on a trusted, password-protected network; never forward this port to the internet.\n',
    );
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
