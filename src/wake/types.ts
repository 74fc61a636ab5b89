// The contract between the wake dispatcher (which decides who to wake, when, and records every
// attempt) and the adapters (which know one way to reach an agent). An adapter never sees a body:
// only ids, senders and subjects, and the fixed wake text (wire/wake-text.ts).
import type { Priority } from '../store/types.js';

export interface WakeMail {
  message_id: string;
  /** The sender's compact address (`claude/s-…`, `alice`). */
  from: string;
  subject: string;
  priority: Priority;
  thread_id: string;
  /** E-mail from outside (the SMTP door): untrusted; left out otherwise. */
  external?: true;
  /** Written through a relay by the sender's delegate (the message's via); left out otherwise. */
  delegate?: string;
}

/** The session a wake is for, as the daemon knows it (attested and corroborated facts only). */
export interface WakeSession {
  id: string;
  lineage: string;
  slug: string | null;
  pid: number;
  /** The process is running now (on this host). */
  live: boolean;
  provider: string | null;
  /** Claude Code's session_id, Codex's thread id … (corroborated, not declared). */
  providerSessionId: string | null;
  cwd: string | null;
  /** The session's hooks are in listen mode. */
  listening: boolean;
}

export interface WakeRequest {
  /** Unique per attempt of one adapter; webhooks send it for de-duplication. */
  eventId: string;
  account: string;
  /** The lineage's latest session, or null when the account has none on record. */
  session: WakeSession | null;
  mail: WakeMail[];
  /** Some mail is urgent: steer a running turn where the adapter can. */
  urgent: boolean;
  /** The fixed wake text: what the agent is told. */
  text: string;
}

export type WakeResult =
  /** The agent was reached (a turn started, a program ran, a webhook answered 2xx …). */
  | { ok: true; detail: string }
  /** Not reached; the chain goes on to the next adapter. */
  | { ok: false; detail: string };

export interface WakeAdapter {
  /** As in the step's `kind`: hooks, codex-app-server, command, webhook. */
  readonly kind: string;
  /** Must settle (never throw) and give up when `signal` aborts. */
  wake(req: WakeRequest, signal: AbortSignal): Promise<WakeResult>;
  close?(): Promise<void>;
}

/** Who listens on a loopback port (the daemon's kernel check, client/port-owner.ts, which this layer
 *  does not import): a step sends nothing (no secret, no wake text) to a port another user holds. */
export type ListenerOwner = (host: string, port: number) => { kind: 'same' | 'none' | 'unknown' } | { kind: 'other'; uid: number };
