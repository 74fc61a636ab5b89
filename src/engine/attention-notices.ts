// Quiet hours for hook notices (notices.ts): while a period holds it, non-urgent mail is not
// announced and a Stop hook does not block for it; the notice keeps its id (NoticeState.held, so
// moving `shown` past it loses nothing) and the first notice after the period tells it, unless
// the session acknowledged it meanwhile. The rule of which mail a period holds is
// attention.ts's, the same one the wake chains follow.
import type * as H from '../wire/hooks.js';
import type { ReaderScope, Store, StoredMessage } from '../store/types.js';
import { senderAddress } from './present.js';
import { holds, type AttentionBook } from './attention.js';

/** Held ids a lineage's notice state keeps, at most (older ones are only in the inbox). */
export const HELD_NOTICES_MAX = 100;

export interface NoticeQuiet {
  /** The earliest end (ms since the epoch) of the periods in force; null: until set open. */
  until: number | null;
  /** Which of these messages a period in force holds. */
  holds(ids: string[]): Promise<boolean[]>;
}

export interface NoticeHeld {
  /** The periods in force for this reader, or null when none is. */
  quiet(): Promise<NoticeQuiet | null>;
  /** Of the held ids, those still to tell (not read or acknowledged meanwhile), as notice items. */
  items(ids: string[]): Promise<H.NoticeItem[]>;
}

export function noticeHeld(o: {
  attention: AttentionBook;
  store: Pick<Store, 'getMessage' | 'ackedAt'>;
  account: string;
  lineage: string;
  scope(): Promise<ReaderScope>;
  printAll(compacts: Iterable<string>): Promise<Map<string, string>>;
}): NoticeHeld {
  const messages = async (ids: string[]): Promise<StoredMessage[]> => (await Promise.all(ids.map((id) => o.store.getMessage(id)))).filter((m): m is StoredMessage => m !== null);
  return {
    async quiet() {
      const own = await o.attention.period(o.account, o.lineage);
      const account = await o.attention.period(o.account, null);
      if (!own && !account) return null;
      // The first end lets something go (the other period may hold less): a wait ends there.
      const ends = [own?.until, account?.until].filter((e): e is number => typeof e === 'number');
      return {
        until: ends.length > 0 ? Math.min(...ends) : null,
        async holds(ids) {
          const byId = new Map((await messages(ids)).map((m) => [m.id, m]));
          return ids.map((id) => {
            const m = byId.get(id);
            if (!m) return false;
            // Session mail: the lineage's period if it has one, else the account's; other mail: either.
            if (m.toKey.startsWith('s:')) return holds((own ?? account)!.mode, m);
            return [own, account].some((p) => p !== null && holds(p.mode, m));
          });
        },
      };
    },
    async items(ids) {
      const ms = await messages(ids);
      if (ms.length === 0) return [];
      const scope = await o.scope();
      const acked = await o.store.ackedAt(
        scope,
        ms.map((m) => ({ seq: m.seq, toKey: m.toKey })),
      );
      // Acknowledged meanwhile: handled, nothing to tell. (Not "surfaced": the notice that held it
      // paged it, which counts as surfaced.)
      const left = ms.filter((m) => !acked.has(m.seq));
      const names = await o.printAll(left.map(senderAddress));
      return left.map((m) => ({
        message_id: m.id,
        from: names.get(senderAddress(m)) ?? senderAddress(m),
        subject: m.subject,
        ...(m.priority === 'urgent' ? { priority: m.priority } : {}),
        ...(m.fromKind === 'external' ? { external: true as const } : {}),
        ...(m.via ? { delegate: m.via.delegate } : {}),
      }));
    },
  };
}
