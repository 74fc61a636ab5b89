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

/** How long a read keeps retrying lost connections. pg_terminate_backend on every backend of the
 *  pool (or a failover) leaves several dead connections the client has not yet seen close, and the
 *  pool may hand a retry one of them (more so on a loaded machine): one event, several losses in a
 *  row. A refused connect (the server is down) is not a loss and fails at once. */
const RETRY_BUDGET_MS = 1_000;

/** Runs a read, and again on another connection when its connection was killed under it
 *  (pg_terminate_backend, failover), with short growing pauses that let the client see the other
 *  closes, for up to RETRY_BUDGET_MS, so one such event does not surface as store_unavailable.
 *  Any other failure, or a loss after the budget, is the caller's. */
export async function withRetry<R>(read: () => Promise<R>): Promise<R> {
  const t0 = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      // The first loss is always retried (a long read may itself pass the budget), later ones
      // within it.
      if (!isConnectionLoss(err) || (attempt > 0 && Date.now() - t0 > RETRY_BUDGET_MS)) throw err;
      await lostConnectionPause(attempt);
    }
  }
}

/** 5, 10, 20 … ms, at most 100 ms: time for the client to see the pool's other closes. */
export const lostConnectionPause = (attempt: number): Promise<void> => new Promise((r) => setTimeout(r, Math.min(5 * 2 ** attempt, 100)));
