// What every file of the PostgreSQL store shares: the client's types, array literals and the
// database clock.
import type postgresNs from 'postgres';

export type Sql = postgresNs.Sql;
export type Tx = postgresNs.TransactionSql;
/** A pool or a transaction: anything a statement can run on. */
export type Q = postgresNs.ISql;

/** A PostgreSQL array literal of strings or numbers, to be cast (`::text[]`, `::bigint[]`). */
export function pgArray(values: readonly (string | number)[]): string {
  return `{${values.map((v) => (typeof v === 'number' ? String(v) : `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`)).join(',')}}`;
}

/** The database clock in ms: heartbeats and expiries never depend on the daemons' clocks agreeing. */
export const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
