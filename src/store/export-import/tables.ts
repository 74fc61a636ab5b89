// The JSON lines format of `m4a export` / `m4a import FILE.jsonl`: a header line, then one line per
// row, `{"type": "<kind>", ...the row's columns}`. The columns are the stores' own (SQLite and
// PostgreSQL share their names and meanings, see migrate-store.ts), so a line goes into either store
// as it is. Leases are left out (short-lived claims of running sessions; their epochs are kept), and
// so are the derived counters (recomputed from the rows on import) and PostgreSQL's host table.

export const FORMAT = 'mail4agent-export';
export const FORMAT_VERSION = 1;

export interface Header {
  type: 'header';
  format: typeof FORMAT;
  version: number;
  /** The store the file was written from, and the number of its migrations then. */
  store: 'sqlite' | 'postgres';
  migration: number;
  /** The source's high-water seq: the target never hands out a seq at or below it. */
  head_seq: number;
  exported_at: number;
  with_secrets: boolean;
}

export interface TableSpec {
  /** The line's `type`. */
  type: string;
  table: string;
  /** Export order (seq order for messages; keys elsewhere). */
  order: string;
  /** The primary key: a line already present stays as the target has it. */
  key: readonly string[];
  /** A conflicting row that carries a higher number wins (both are true lower bounds). */
  higher?: string;
}

/** In import order (no foreign keys, but messages before acks reads naturally). */
export const TABLES: readonly TableSpec[] = [
  { type: 'meta', table: 'meta', order: 'key', key: ['key'] },
  { type: 'account', table: 'accounts', order: 'id', key: ['id'] },
  { type: 'room', table: 'rooms', order: 'name', key: ['name'] },
  { type: 'member', table: 'members', order: 'room, account', key: ['room', 'account'] },
  { type: 'team_change', table: 'team_changes', order: 'id', key: ['id'] },
  { type: 'contact', table: 'contacts', order: 'account, contact', key: ['account', 'contact'] },
  { type: 'listener', table: 'listeners', order: 'account', key: ['account'] },
  // Registration order breaks createdAt ties: SQLite's rowid, PostgreSQL's reg (both left out of the
  // line; the target numbers the rows in the file's order).
  { type: 'session', table: 'sessions', order: '', key: ['account', 'id'] },
  { type: 'name', table: 'names', order: 'account, name', key: ['account', 'name'] },
  { type: 'message', table: 'messages', order: 'seq', key: ['seq'] },
  { type: 'ack', table: 'acks', order: 'ack_key, seq', key: ['ack_key', 'seq'] },
  { type: 'ack_floor', table: 'ack_floors', order: 'ack_key, to_key', key: ['ack_key', 'to_key'], higher: 'floor' },
  { type: 'record', table: 'records', order: 'kind, id', key: ['kind', 'id'] },
  { type: 'task', table: 'tasks', order: 'id', key: ['id'] },
  { type: 'approval', table: 'approvals', order: 'id', key: ['id'] },
  { type: 'lease_epoch', table: 'lease_epochs', order: 'space, resource', key: ['space', 'resource'], higher: 'epoch' },
];

export const BY_TYPE: ReadonlyMap<string, TableSpec> = new Map(TABLES.map((t) => [t.type, t]));

/** Columns a store keeps for itself: never written to a line. */
export const PRIVATE_COLUMNS: Readonly<Record<string, readonly string[]>> = { sessions: ['reg'], members: ['acked'] };

/** What an account holds instead of a digest when the file carried none: no secret hashes to it
 *  (digests are 64 hex digits), so the account is unusable until `m4a admin account rotate`. */
export const NO_SECRET = 'none';

/** The account's secret digest: left out of the line unless --with-secrets. */
export const SECRET_COLUMN = 'secret_digest';

export type Row = Record<string, unknown>;
