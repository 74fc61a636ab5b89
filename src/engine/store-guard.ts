// A store failure becomes store_unavailable {operation}; the cause is logged, never returned.
import { MailError } from '../wire/errors.js';
import { STORE_METHODS, type Store, type StoreMethod } from '../store/types.js';
import type { Logger } from './log.js';

export function guardStore(store: Store, log: Logger): Store {
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
