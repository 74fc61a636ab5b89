// Summarises a V8 .heapsnapshot (node --heapsnapshot-signal): self size and count per constructor
// (objects), per function name (closures) and per kind (strings, code, arrays, …). The node table is
// read straight from the bytes: a snapshot of a large heap is longer than a string may be.
import { readFileSync } from 'node:fs';

export interface HeapEntry {
  name: string;
  count: number;
  bytes: number;
}

export interface HeapSummary {
  nodes: number;
  totalBytes: number;
  top: HeapEntry[];
  /** Every entry, largest first. */
  all: HeapEntry[];
}

interface Meta {
  node_fields: string[];
  node_types: [string[], ...unknown[]];
}

export function summarizeHeap(path: string, topN = 20): HeapSummary {
  const buf = readFileSync(path);
  const find = (s: string, from = 0): number => {
    const at = buf.indexOf(s, from, 'latin1');
    if (at === -1) throw new Error(`${path}: no ${s}`);
    return at;
  };
  const nodesAt = find('"nodes":[');
  const header = JSON.parse(`${buf.toString('utf8', 0, nodesAt).replace(/,\s*$/, '')}}`) as { snapshot: { meta: Meta } };
  const meta = header.snapshot.meta;
  const width = meta.node_fields.length;
  const typeAt = meta.node_fields.indexOf('type');
  const nameAt = meta.node_fields.indexOf('name');
  const sizeAt = meta.node_fields.indexOf('self_size');
  const types = meta.node_types[0];
  const stringsAt = find('"strings":[', nodesAt);
  const strings = JSON.parse(buf.toString('utf8', stringsAt + '"strings":'.length, buf.lastIndexOf(']') + 1)) as string[];

  const byKey = new Map<string, HeapEntry>();
  const row: number[] = new Array<number>(width).fill(0);
  let field = 0;
  let value = 0;
  let inNumber = false;
  let nodes = 0;
  let totalBytes = 0;
  const end = find('],', nodesAt);
  for (let i = nodesAt + '"nodes":['.length; i <= end; i++) {
    const c = buf[i] as number;
    if (c >= 48 && c <= 57) {
      value = value * 10 + (c - 48);
      inNumber = true;
      continue;
    }
    if (!inNumber) continue;
    row[field++] = value;
    value = 0;
    inNumber = false;
    if (field < width) continue;
    field = 0;
    nodes++;
    const type = types[row[typeAt] as number] ?? '?';
    const name = strings[row[nameAt] as number] ?? '?';
    const size = row[sizeAt] as number;
    totalBytes += size;
    const key = type === 'object' ? name : type === 'closure' ? `closure ${name || '(anonymous)'}` : `(${type})`;
    const e = byKey.get(key) ?? { name: key, count: 0, bytes: 0 };
    e.count++;
    e.bytes += size;
    byKey.set(key, e);
  }
  const all = [...byKey.values()].sort((a, b) => b.bytes - a.bytes);
  return { nodes, totalBytes, top: all.slice(0, topN), all };
}
