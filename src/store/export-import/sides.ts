// What export and import need of a store, so either store can be either end.
import type { Row, TableSpec } from './tables.js';

export interface ExportSource {
  store: 'sqlite' | 'postgres';
  migration: number;
  headSeq: number;
  /** For the progress bar. */
  messages: number;
  /** The table's rows in export order, a page at a time. */
  rows(t: TableSpec): AsyncGenerator<Row[]>;
  close(): Promise<void>;
}

export interface ImportTarget {
  store: 'sqlite' | 'postgres';
  migration: number;
  /** The target's head before the import: a new message at or below it is refused. */
  headBefore: number;
  columns(table: string): ReadonlySet<string>;
  /** Inserts rows of one table, each with the same `columns` (a row may hold other keys: they
   *  are not written); returns how many were new (or raised). `lines` are the rows' line numbers,
   *  for the errors. */
  insert(t: TableSpec, rows: Row[], lines: number[], columns: readonly string[]): Promise<number>;
  /** Recomputes the counters, carries the head over and commits; returns the head. */
  finish(sourceHead: number): Promise<number>;
  abort(): Promise<void>;
}
