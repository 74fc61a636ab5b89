// A store failure becomes store_unavailable {operation}; the cause is logged, never returned.
import { MailError } from '../wire/errors.js';
import { STORE_METHODS, type Store, type StoreMethod } from '../store/types.js';
import type { Logger } from './log.js';
import type { Observer } from './observer.js';

/** With an observer, every call's duration is reported (by method, failed or not). */
export function guardStore(store: Store, log: Logger, observer?: Observer): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      // Subscribing touches no data and answers synchronously (an unsubscribe function): not guarded.
      const role = typeof prop === 'string' && Object.hasOwn(STORE_METHODS, prop) ? STORE_METHODS[prop as StoreMethod] : null;
      if (typeof v !== 'function' || role === 'subscribe') return typeof v === 'function' ? ((v as (...a: unknown[]) => unknown).bind(target) as unknown) : v;
      const fn = v as (...a: unknown[]) => unknown;
      return (...args: unknown[]) => {
        const fail = (err: unknown): never => {
          if (err instanceof MailError) throw err;
          log.error({ operation: String(prop), err: err instanceof Error ? err.message : String(err) }, 'store failure');
          throw new MailError('store_unavailable', `the store failed during ${String(prop)}`, { operation: String(prop) });
        };
        if (observer) return timed(String(prop), observer, () => fn.apply(target, args), fail);
        try {
          const r = fn.apply(target, args);
          return r instanceof Promise ? r.catch(fail) : r;
        } catch (err) {
          return fail(err);
        }
      };
    },
  });
}

function timed(method: string, observer: Observer, call: () => unknown, fail: (err: unknown) => never): unknown {
  const t0 = performance.now();
  const done = (failed: boolean) => observer.storeCall(method, (performance.now() - t0) / 1000, failed);
  try {
    const r = call();
    if (!(r instanceof Promise)) {
      done(false);
      return r;
    }
    return r.then(
      (v: unknown) => {
        done(false);
        return v;
      },
      (err: unknown) => {
        done(true);
        return fail(err);
      },
    );
  } catch (err) {
    done(true);
    return fail(err);
  }
}
