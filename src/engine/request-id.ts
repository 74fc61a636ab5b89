// A request id on every log line written while a request is served: the doors run each request in
// a scope, and the daemon's logger adds the scope's id (`req_id`) to whatever it logs, the engine's
// and the store's lines included, without threading a logger through every call.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import type { Logger } from './log.js';

const scope = new AsyncLocalStorage<string>();

/** An incoming id is taken only when it is a short token that cannot forge a log field or header. */
const SAFE_ID = /^[A-Za-z0-9._:-]{1,64}$/;

export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && SAFE_ID.test(header) ? header : randomBytes(9).toString('base64url');
}

/** Runs fn with `id` as the request id of everything it logs, synchronously and after awaits. */
export function withRequestId<R>(id: string, fn: () => R): R {
  return scope.run(id, fn);
}

export function currentRequestId(): string | undefined {
  return scope.getStore();
}

/** `log`, with the current request's id (if any) on each line as `req_id`. */
export function requestIdLogger(log: Logger): Logger {
  const at =
    (f: (obj: object, msg?: string) => void) =>
    (obj: object, msg?: string): void => {
      const id = scope.getStore();
      f(id === undefined ? obj : { req_id: id, ...obj }, msg);
    };
  return { debug: at(log.debug.bind(log)), info: at(log.info.bind(log)), warn: at(log.warn.bind(log)), error: at(log.error.bind(log)) };
}
