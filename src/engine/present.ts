// Store records → wire shapes. Addresses leave as compact strings.
import type { MessageOut, Card, SessionOut } from '../wire/ops.js';
import type { PagedMessage, SessionRecord, StoredMessage } from '../store/types.js';

export const iso = (ms: number): string => new Date(ms).toISOString();

export function senderAddress(m: StoredMessage): string {
  return m.fromSession ? `${m.fromAccount}/${m.fromSession}` : m.fromAccount;
}

export function presentMessage(m: StoredMessage, ackedAt: number | null, includeBody = true): MessageOut {
  const out: MessageOut = {
    id: m.id,
    thread_id: m.threadId,
    from: senderAddress(m),
    from_kind: m.fromKind,
    to: m.toAddress,
    subject: m.subject,
    priority: m.priority,
    created_at: iso(m.createdAt),
    acked_at: ackedAt === null ? null : iso(ackedAt),
  };
  if (includeBody) out.body = m.body;
  if (m.replyTo) out.reply_to = m.replyTo;
  if (m.correlation !== null) out.correlation = m.correlation;
  if (m.refs.length) out.refs = m.refs.map((r) => (r.digest === undefined ? { kind: r.kind, locator: r.locator } : { ...r }));
  return out;
}

export function presentPaged(m: PagedMessage, includeBody: boolean): MessageOut {
  return presentMessage(m, m.ackedAt, includeBody);
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
  return out as { [K in keyof T]?: string };
}
