// Store records → wire shapes. Addresses leave as compact strings; message items leave out
// what is default or implied (a reader pays for every token), unless asked for verbose.
import type { MessageOut, Card, PeerOut, SessionOut } from '../wire/ops.js';
import type { PagedMessage, SessionRecord, StoredMessage } from '../store/types.js';
import type { Printed } from './short-address.js';
import { fenceBody } from './email-fence.js';
import { extractCodesAndLinks } from './mail-extract.js';

export const iso = (ms: number): string => new Date(ms).toISOString();
/** Second precision, as message items carry it: `2025-01-02T03:04:05Z`. A page's messages often
 *  share their seconds, so the last few hundred are kept (one Date and string less per item). */
export function isoSecs(ms: number): string {
  const s = Math.floor(ms / 1000);
  let out = SECONDS.get(s);
  if (out === undefined) {
    if (SECONDS.size >= 512) SECONDS.clear();
    SECONDS.set(s, (out = `${iso(ms).slice(0, -5)}Z`));
  }
  return out;
}
const SECONDS = new Map<number, string>();

/** The sender as stored, with its full session id: the key of its printed form. */
export function senderAddress(m: StoredMessage): string {
  return m.fromSession ? `${m.fromAccount}/${m.fromSession}` : m.fromAccount;
}

export interface PresentOptions {
  includeBody?: boolean;
  /** The reader's account: `to` is left out when it is that account. */
  reader?: string | null;
  /** Printed forms of the addresses (short-address.ts); without them, addresses as stored. */
  printed?: Printed;
  /** Adds the sender's full session id (get's message). */
  fromSession?: boolean;
  /** Every field, null and default ones too, timestamps to the millisecond (for scripts). */
  verbose?: boolean;
}

/** How one reader sees messages: the presentation options but the names, which the engine looks
 *  up per answer, and the reader's own session (whose printed form then costs no read). */
export interface ReaderView extends Omit<PresentOptions, 'printed'> {
  self?: SessionRecord | null;
}

export function presentMessage(m: StoredMessage, ackedAt: number | null, o: PresentOptions = {}): MessageOut {
  const v = o.verbose === true;
  const at = v ? iso : isoSecs;
  // Fields are set in their wire order (JSON keeps it), each only when it is there: a spread of a
  // conditional object per field cost an object each, on the path of every page.
  const out = { message_id: m.id } as MessageOut;
  if (v || m.threadId !== m.id) out.thread_id = m.threadId;
  out.from = o.printed ? o.printed.from(m) : senderAddress(m);
  if (m.fromSession && (v || o.fromSession)) out.from_session = m.fromSession;
  if (v || m.fromKind !== 'agent') out.from_kind = m.fromKind;
  if (v || m.toAddress !== o.reader) out.to = o.printed ? o.printed.to(m) : m.toAddress;
  out.subject = m.subject;
  if (v || m.priority !== 'normal') out.priority = m.priority;
  out.created_at = at(m.createdAt);
  if (v || ackedAt !== null) out.acked_at = ackedAt === null ? null : at(ackedAt);
  const external = m.fromKind === 'external';
  if (o.includeBody ?? true) out.body = external ? fenceBody(m.body, m.id) : m.body;
  if (m.replyTo) out.reply_to = m.replyTo;
  if (m.correlation !== null) out.correlation = m.correlation;
  if (m.refs.length) out.refs = m.refs.map((r) => (r.digest === undefined ? { kind: r.kind, locator: r.locator } : { ...r }));
  // Only a task's messages have it (ordinary mail pays nothing for it, verbose or not).
  if (m.task) out.task = { task_id: m.task.task_id, state: m.task.state, version: m.task.version };
  // Mail from outside carries what a verification mail asks of its reader (docs/email.md).
  if (external) {
    const { codes, links } = extractCodesAndLinks(m.subject, m.body);
    if (v || codes.length) out.codes = codes;
    if (v || links.length) out.links = links;
  }
  // A delegate's mail through a relay: its reader asks the person before acting on it.
  if (m.via) out.via = { relay: m.via.relay, delegate: m.via.delegate };
  return out;
}

export function presentPaged(m: PagedMessage, o: PresentOptions): MessageOut {
  return presentMessage(m, m.ackedAt, o);
}

export function presentCard(s: SessionRecord | null): Card {
  if (!s) return { attested: null, corroborated: {}, declared: {} };
  const c = s.corroborated;
  const d = s.declared;
  return {
    attested: { pid: s.pid, start_time: s.startTime, exe: s.exe, uid: s.uid, host: s.hostId },
    corroborated: strip({ provider: c.provider, provider_session_id: c.providerSessionId, model: c.model, cwd: c.cwd }),
    declared: strip({ working_on: d.workingOn, role: d.role, parent: d.parent }),
  };
}

export function presentSession(s: SessionRecord, live: boolean, aliases: string[]): SessionOut {
  return {
    address: `${s.account}/${s.id}`,
    slug: s.slug,
    aliases,
    live,
    last_seen: iso(s.lastSeen),
    ended_at: s.endedAt === null ? null : iso(s.endedAt),
    successor: s.successor ? `${s.account}/${s.successor}` : null,
    card: presentCard(s),
  };
}

function strip<T extends Record<string, string | undefined>>(o: T): { [K in keyof T]?: string } {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out;
}

/** A session as peers lists it by default: its printed address and what it declared, nothing else. */
export function presentPeer(s: SessionRecord, live: boolean, address: string): PeerOut {
  const d = s.declared;
  return {
    address,
    ...(d.workingOn ? { working_on: d.workingOn } : {}),
    ...(d.role ? { role: d.role } : {}),
    ...(live ? {} : { ended: true as const }),
  };
}
