// A lost connection. The pool reconnects by itself (client.ts); what a caller must decide is
// whether the statement that was in flight may run again. A read may: it only SELECTs. A write
// may not be repeated blindly (the append batch finds out whether it committed, append-batch.ts).

/** The connection went away (terminated backend, reset, closed): the statement's fate is unknown. */
export function isConnectionLoss(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return (
    code.startsWith('CONNECTION_') ||
    code === 'ECONNRESET' ||
    code === 'EPIPE' ||
    code.startsWith('08') || // connection exception
    code === '57P01' || // admin_shutdown (pg_terminate_backend)
    code === '57P02' || // crash_shutdown
    code === '57P03' // cannot_connect_now
  );
}

/** Runs a read, and once more on a new connection when its connection was killed under it
 *  (pg_terminate_backend, failover), so a single lost connection does not surface as
 *  store_unavailable. Any other failure, or a second loss, is the caller's. */
export async function withRetry<R>(read: () => Promise<R>): Promise<R> {
  try {
    return await read();
  } catch (err) {
    if (!isConnectionLoss(err)) throw err;
    return read();
  }
}
