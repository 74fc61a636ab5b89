// One page, many readers. A commit that wakes a room's parked members gives each the same new mail;
// the wake batch (wake-batch.ts) presents each distinct page once, and every reader whose view of it
// is the same holds that one frozen array in its answer. Doors write answers through jsonOf or
// bytesOf, which serialise a shared value once and splice it in: the bytes are JSON.stringify's,
// and readers whose whole answers are equal (cursor and unread too) are written one Buffer.
import type { MessageOut } from '../wire/ops.js';
import type { PagedMessage, StoredMessage } from '../store/types.js';
import { presentPaged, type ReaderView } from './present.js';
import type { Printed, ShortAddresses } from './short-address.js';

interface SharedJson {
  json: string | null;
  /** The last whole answer that held this value, and its bytes. */
  text: string | null;
  bytes: Buffer | null;
}

const shared = new WeakMap<object, SharedJson>();

/** Marks `value` as shared by many answers: frozen (no door may change one reader's copy), and
 *  serialised at most once. */
export function share<T extends object>(value: T): T {
  if (Array.isArray(value)) for (const v of value as unknown[]) if (v !== null && typeof v === 'object') Object.freeze(v);
  shared.set(Object.freeze(value), { json: null, text: null, bytes: null });
  return value;
}

function jsonOfShared(e: SharedJson, v: object): string {
  return (e.json ??= JSON.stringify(v));
}

/** JSON.stringify of a plain object with its shared top-level fields serialised once (an object's
 *  own enumerable keys, in order, undefined and function values left out: JSON.stringify's rules).
 *  Null when nothing in it is shared. */
function splice(body: Record<string, unknown>): { text: string; first: SharedJson } | null {
  let first: SharedJson | null = null;
  for (const k in body) {
    const v = body[k];
    if (v !== null && typeof v === 'object' && shared.has(v)) {
      first = shared.get(v) as SharedJson;
      break;
    }
  }
  if (!first) return null;
  let text = '{';
  for (const k of Object.keys(body)) {
    const v = body[k];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    const e = v !== null && typeof v === 'object' ? shared.get(v) : undefined;
    text += `${text.length > 1 ? ',' : ''}${JSON.stringify(k)}:${e ? jsonOfShared(e, v as object) : JSON.stringify(v)}`;
  }
  return { text: `${text}}`, first };
}

/** JSON.stringify, with nothing (not `undefined`) for a value it leaves out. */
const stringify = (v: unknown): string => (v === undefined || typeof v === 'function' || typeof v === 'symbol' ? '' : JSON.stringify(v));

const plain = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';

/** The JSON of an answer, byte for byte JSON.stringify's. */
export function jsonOf(body: unknown): string {
  const s = plain(body) ? splice(body) : null;
  return s ? s.text : stringify(body);
}

/** The UTF-8 bytes of an answer; answers equal in full to the last one that shared the same value
 *  get the same Buffer. */
export function bytesOf(body: unknown): Buffer {
  const b = textOrBytes(body);
  return typeof b === 'string' ? Buffer.from(b) : b;
}

/** An answer as a door writes it: its JSON text when nothing in it is shared (a string is written
 *  with the headers in one piece), else bytesOf's Buffer. */
export function textOrBytes(body: unknown): string | Buffer {
  const s = plain(body) ? splice(body) : null;
  if (!s) return stringify(body);
  const e = s.first;
  if (e.text !== s.text || !e.bytes) {
    e.text = s.text;
    e.bytes = Buffer.from(s.text);
  }
  return e.bytes;
}

/** The pages of one wake batch: its rows, their addresses printed once, each distinct page
 *  presented once. */
export class PageMemo {
  private pages = new Map<string, MessageOut[]>();
  private unacked = new Map<number, PagedMessage>();
  private printed: Promise<Printed | null> | null = null;

  constructor(
    /** Every row of the batch, by seq: what `printed` covers. */
    private rows: ReadonlyMap<number, StoredMessage>,
    /** Counts distinct pages presented, and answers that took one already presented. */
    private stats: { presented: number; reused: number } = { presented: 0, reused: 0 },
  ) {}

  /** A woken row as the page reads it; unacknowledged rows are one object for every reader. */
  paged(m: StoredMessage, ackedAt: number | null): PagedMessage {
    if (ackedAt !== null) return { ...m, ackedAt };
    let p = this.unacked.get(m.seq);
    if (!p) this.unacked.set(m.seq, (p = Object.freeze({ ...m, ackedAt: null })));
    return p;
  }

  /** The reader's presented page, shared with every reader of the batch that sees it the same way;
   *  null when it must be presented for this reader alone: a row not of the batch (shown mail), one
   *  sent by or to the reader's own session (printed from its own record, which may be newer), or
   *  the addresses could not be printed. */
  async present(rows: readonly PagedMessage[], look: ReaderView, addresses: ShortAddresses): Promise<MessageOut[] | null> {
    const self = look.self;
    const own = self ? `${self.account}/${self.id}` : null;
    // What presentMessage reads besides the row: include_bodies, verbose, and whether `to` is the reader.
    let key = `${look.includeBody === false ? 0 : 1}${look.verbose === true ? 1 : 0}${look.fromSession === true ? 1 : 0}`;
    for (const m of rows) {
      if (!this.rows.has(m.seq)) return null;
      if (self && ((m.fromSession === self.id && m.fromAccount === self.account) || m.toAddress === own)) return null;
      key += `|${m.seq}.${m.ackedAt ?? ''}.${m.toAddress === look.reader ? 1 : 0}`;
    }
    const printed = await (this.printed ??= addresses.forMessages([...this.rows.values()], []).catch(() => null));
    if (!printed) return null;
    let page = this.pages.get(key);
    if (page) {
      this.stats.reused++;
      return page;
    }
    const o = { ...look, printed };
    page = share(rows.map((m) => presentPaged(m, o)));
    this.pages.set(key, page);
    this.stats.presented++;
    return page;
  }
}
