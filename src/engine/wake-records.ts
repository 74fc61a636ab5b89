// How wake chains, wake attempts and receipts sit in the store's generic records. One place names
// the kinds and id layouts, so the dispatcher (src/wake) writes what the engine reads back.
import type { WakeStep } from '../wire/wake.js';

export const REC = {
  /** id: `<account>` or `<account>/<lineage>` → ChainRecord */
  chain: 'wake_chain',
  /** id: `<message id>|<recipient>|<at base36>-<n>` → AttemptRecord (one per adapter tried) */
  attempt: 'wake_attempt',
  /** id: `<message id>|<recipient>`: the daemon that wakes this recipient for this message. */
  claim: 'wake_claim',
  /** id: `<message id>|<recipient>` → {at}: first returned by an inbox read of the recipient. */
  surfaced: 'surfaced',
  /** id: the lineage's mail key → {noticed, listening}: what its hooks were last told. */
  notice: 'notice',
  /** id: `<account>|<timer id>` → TimerRecord */
  timer: 'timer',
  /** id: `<account>` or `<account>/<lineage>` → a quiet period (engine/attention.ts). */
  attention: 'attention',
  /** id: `<recipient>|<message id>` → HeldWake: a wake a quiet period holds until it ends. */
  held: 'wake_held',
  /** id: `<recipient>|<sender>` → a contact request (engine/contact-requests.ts). */
  contactRequest: 'contact_request',
  /** id: `<sender>|<recipient>`: the sender's index of the requests it made. */
  contactAsked: 'contact_asked',
  /** id: `<recipient>|<sender>|<message id>` → a message held for the request. */
  contactHeld: 'contact_held',
  /** id: a contact_held id → {}: a caller is delivering or returning it (claimed at updatedAt). */
  contactClaim: 'contact_claim',
} as const;

export interface ChainRecord {
  account: string;
  lineage: string | null;
  steps: WakeStep[];
  rooms: boolean;
  debounceMs: number;
  /** incarnationOf the account the chain was set for: a chain of a removed account of the same
   *  name (still cached, or read by another daemon before the removal) never runs for a new one. */
  incarnation?: string;
}

export interface AttemptRecord {
  eventId: string;
  adapter: string;
  at: number;
  ok: boolean;
  detail: string;
}

export interface HeldWake {
  messageId: string;
  account: string;
  /** Session mail: its lineage; direct and room mail: null (the dispatcher picks a session). */
  lineage: string | null;
  /** The scope of the period that held it (`<account>` or `<account>/<lineage>`). */
  by: string;
  at: number;
}

export const heldId = (recipient: string, messageId: string): string => `${recipient}|${messageId}`;

/** A recipient of a message: an account (direct and room mail) or `account/lineage` (session mail). */
export const recipientOf = (account: string, lineage: string | null): string => (lineage ? `${account}/${lineage}` : account);

export const chainId = recipientOf;

export const attemptId = (messageId: string, recipient: string, at: number, n: number): string =>
  `${messageId}|${recipient}|${at.toString(36).padStart(9, '0')}-${n.toString(36).padStart(6, '0')}`;
