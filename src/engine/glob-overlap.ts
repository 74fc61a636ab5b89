// Globs of file reservations (`path:` leases): checking, matching a path, and deciding whether
// two globs can match a common path (docs/leases.md, "File reservations").
//
// Paths are relative to the repository root, `/`-separated, with non-empty segments.
//   `*`      any characters within one segment (never `/`); `**` inside a segment is just `*`
//   `**`     as a whole segment: zero or more whole segments (`a/**/b` matches `a/b`, `a/x/y/b`)
//   `?`      exactly one character other than `/`
//   `[abc]` `[a-z]` `[!a]` (`[^a]`)  one character of (not of) the class; `]` first is literal,
//            `-` first or last is literal; `*`, `?` and `[` inside a class are literal
//   anything else is literal: no braces, no escapes (backslashes are refused; write `[*]`)
// Dot files are not special: `*` matches `.env`. Matching is case-sensitive, as Linux
// filesystems are; on a case-insensitive filesystem reserve both spellings (`[Rr]eadme.md`).
// A glob ending in `/` names directories and covers everything under them (`src/parser/` ≡
// `src/parser/**`, which also matches `src/parser` itself); any other glob means exactly the paths
// it matches, so `src/parser` is that one path. Git stages files, so reserve a directory as
// `src/parser/` or `src/parser/**`. (Letting a wildcard-free glob cover a subtree too would make
// every file reservation, `src/a.ts`, overlap every `**/*.md`: through `src/a.ts/x.md`.)
//
// Overlap is decided exactly on the two patterns, never by enumeration: a walk over pairs of
// segment positions (a `**` may swallow the other side's segment), and inside a pair of segments
// a walk over pairs of character positions, both memoised, so the work is bounded by the product
// of the two patterns' sizes whatever they are (`**/**/**…` included).
import { LEASE_LIMITS } from '../wire/leases.js';

type Ranges = readonly (readonly [number, number])[];
type Atom = { k: 'star' } | { k: 'set'; set: Ranges };
type Segment = { k: 'globstar' } | { k: 'seg'; atoms: Atom[] };

const SLASH = 0x2f;
const MAX_CP = 0x10ffff;
/** Every character a path segment may hold. */
const ANY: Ranges = [
  [0, SLASH - 1],
  [SLASH + 1, MAX_CP],
];

const isControl = (cp: number): boolean => cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);

/** Sorted, merged, without `/`. */
function normalise(ranges: [number, number][]): Ranges {
  const sorted = ranges.sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return intersect(out, ANY);
}

function complement(set: Ranges): Ranges {
  const out: [number, number][] = [];
  let next = 0;
  for (const [lo, hi] of set) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CP) out.push([next, MAX_CP]);
  return intersect(out, ANY);
}

function intersect(a: Ranges, b: Ranges): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    const [alo, ahi] = a[i]!;
    const [blo, bhi] = b[j]!;
    const lo = Math.max(alo, blo);
    const hi = Math.min(ahi, bhi);
    if (lo <= hi) out.push([lo, hi]);
    if (ahi < bhi) i++;
    else j++;
  }
  return out;
}

function meets(a: Ranges, b: Ranges): boolean {
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    const [alo, ahi] = a[i]!;
    const [blo, bhi] = b[j]!;
    if (Math.max(alo, blo) <= Math.min(ahi, bhi)) return true;
    if (ahi < bhi) i++;
    else j++;
  }
  return false;
}

const holds = (set: Ranges, cp: number): boolean => set.some(([lo, hi]) => cp >= lo && cp <= hi);

/** A `[...]` class starting at cps[i] (the `[`): its set and the index after `]`, or a problem. */
function parseClass(cps: number[], i: number): { set: Ranges; end: number } | string {
  let j = i + 1;
  const neg = cps[j] === 0x21 || cps[j] === 0x5e; // ! or ^
  if (neg) j++;
  const ranges: [number, number][] = [];
  for (let first = true; ; first = false) {
    const cp = cps[j];
    if (cp === undefined) return 'unbalanced [: a class without its closing ]';
    if (cp === 0x5d && !first) break; // ]
    const to = cps[j + 2];
    if (cps[j + 1] === 0x2d && to !== undefined && to !== 0x5d) {
      if (to < cp) return `reversed range in a class: ${String.fromCodePoint(cp)}-${String.fromCodePoint(to)}`;
      ranges.push([cp, to]);
      j += 3;
    } else {
      ranges.push([cp, cp]);
      j++;
    }
  }
  const set = normalise(ranges);
  return { set: neg ? complement(set) : set, end: j + 1 };
}

function parseSegment(text: string): Segment | string {
  if (text === '**') return { k: 'globstar' };
  const cps = Array.from(text, (c) => c.codePointAt(0)!);
  const atoms: Atom[] = [];
  for (let i = 0; i < cps.length;) {
    const cp = cps[i]!;
    if (cp === 0x2a) {
      if (atoms[atoms.length - 1]?.k !== 'star') atoms.push({ k: 'star' });
      i++;
    } else if (cp === 0x3f) {
      atoms.push({ k: 'set', set: ANY });
      i++;
    } else if (cp === 0x5b) {
      const c = parseClass(cps, i);
      if (typeof c === 'string') return c;
      atoms.push({ k: 'set', set: c.set });
      i = c.end;
    } else {
      atoms.push({ k: 'set', set: [[cp, cp]] });
      i++;
    }
  }
  return { k: 'seg', atoms };
}

interface Compiled {
  segs: Segment[];
}

function compile(glob: string): Compiled | string {
  if (glob === '') return 'empty';
  const bytes = Buffer.byteLength(glob, 'utf8');
  if (bytes > LEASE_LIMITS.globBytes) return `over ${LEASE_LIMITS.globBytes} bytes (${bytes})`;
  for (const ch of glob) if (isControl(ch.codePointAt(0)!)) return 'a control character (NUL, newline, tab …)';
  if (glob.includes('\\')) return 'a backslash: separators are /, and a wildcard is taken literally inside a class ([*])';
  if (glob.startsWith('/')) return 'absolute: globs are relative to the repository root';
  const dir = glob.endsWith('/');
  const parts = (dir ? glob.slice(0, -1) : glob).split('/');
  const segs: Segment[] = [];
  for (const p of parts) {
    if (p === '') return 'an empty segment (//, or a lone /)';
    if (p === '..') return 'a .. segment: globs stay inside the repository';
    if (p === '.') return 'a . segment: write the path without it';
    const s = parseSegment(p);
    if (typeof s === 'string') return s;
    // `**/**` means what `**` means: one keeps the walks small.
    if (s.k === 'globstar' && segs[segs.length - 1]?.k === 'globstar') continue;
    segs.push(s);
  }
  // A directory covers what is under it (see the head of this file).
  if (dir && segs[segs.length - 1]?.k !== 'globstar') segs.push({ k: 'globstar' });
  return { segs };
}

// Reservations are compared again and again (every claim against every live lease of the
// repository, every staged path against each): keep compiled globs.
const cache = new Map<string, Compiled>();

function compiled(glob: string): Compiled {
  const hit = cache.get(glob);
  if (hit) return hit;
  const c = compile(glob);
  if (typeof c === 'string') throw new TypeError(`not a valid glob (${c}): check it with checkGlob first`);
  if (cache.size >= 1024) cache.clear();
  cache.set(glob, c);
  return c;
}

/** What is wrong with a glob (one line), or null when it is valid. */
export function checkGlob(glob: string): string | null {
  const c = compile(glob);
  return typeof c === 'string' ? c : null;
}

/** What is wrong with a path a guard asks about (relative, `/`-separated, no `.`/`..`/empty
 *  segments, no control characters, at most LEASE_LIMITS.pathBytes), or null. */
export function checkPath(path: string): string | null {
  if (path === '') return 'empty';
  const bytes = Buffer.byteLength(path, 'utf8');
  if (bytes > LEASE_LIMITS.pathBytes) return `over ${LEASE_LIMITS.pathBytes} bytes (${bytes})`;
  for (const ch of path) if (isControl(ch.codePointAt(0)!)) return 'a control character (NUL, newline, tab …)';
  if (path.startsWith('/')) return 'absolute: paths are relative to the repository root';
  for (const p of path.split('/')) {
    if (p === '') return 'an empty segment (//, or a trailing /)';
    if (p === '.' || p === '..') return `a ${p} segment`;
  }
  return null;
}

function segMatches(atoms: Atom[], cps: number[]): boolean {
  if (cps.length === 0) return false;
  // row[j]: atoms[0..i) match cps[0..j)
  let row = new Uint8Array(cps.length + 1);
  row[0] = 1;
  for (const a of atoms) {
    const next = new Uint8Array(cps.length + 1);
    if (a.k === 'star') {
      for (let j = 0; j <= cps.length; j++) next[j] = row[j]! || (j > 0 && next[j - 1]!) ? 1 : 0;
    } else {
      for (let j = 1; j <= cps.length; j++) next[j] = row[j - 1]! && holds(a.set, cps[j - 1]!) ? 1 : 0;
    }
    row = next;
  }
  return row[cps.length] === 1;
}

/** Whether `path` (relative, `/`-separated) is one the glob covers. An invalid glob throws. */
export function globMatches(glob: string, path: string): boolean {
  const { segs } = compiled(glob);
  const parts = path.split('/').map((p) => Array.from(p, (c) => c.codePointAt(0)!));
  if (parts.some((p) => p.length === 0)) return false;
  // reach[j]: glob segments [0..i) match path segments [0..j)
  let reach = new Uint8Array(parts.length + 1);
  reach[0] = 1;
  for (const s of segs) {
    const next = new Uint8Array(parts.length + 1);
    for (let j = 0; j <= parts.length; j++) {
      if (s.k === 'globstar') next[j] = reach[j]! || (j > 0 && next[j - 1]!) ? 1 : 0;
      else next[j] = j > 0 && reach[j - 1]! && segMatches(s.atoms, parts[j - 1]!) ? 1 : 0;
    }
    reach = next;
  }
  return reach[parts.length] === 1;
}

/** Text every path the glob matches starts with (for a cheap test before globMatches): the
 *  literal start, up to its first wildcard; before a `**` without the `/`, since `src/**` and
 *  `src/parser/` also match `src` and `src/parser` themselves. */
export function globPrefix(glob: string): string {
  const { segs } = compiled(glob);
  let out = '';
  for (const [i, s] of segs.entries()) {
    if (s.k === 'globstar') return out;
    if (i > 0) out += '/';
    for (const a of s.atoms) {
      const one = a.k === 'set' && a.set.length === 1 && a.set[0]![0] === a.set[0]![1] ? a.set[0]![0] : undefined;
      if (one === undefined) return out;
      out += String.fromCodePoint(one);
    }
  }
  return out;
}

/** Whether some segment matches both. The walk may accept the empty string, but only where both
 *  sides are nothing but stars, and those also share any one character: no flag is needed. */
function segsOverlap(x: Atom[], y: Atom[], work: { steps: number }): boolean {
  const w = y.length + 1;
  const seen = new Uint8Array((x.length + 1) * w);
  const todo: number[] = [0];
  seen[0] = 1;
  const push = (p: number, q: number): void => {
    if (!seen[p * w + q]) {
      seen[p * w + q] = 1;
      todo.push(p * w + q);
    }
  };
  for (let id = todo.pop(); id !== undefined; id = todo.pop()) {
    work.steps++;
    const p = Math.floor(id / w);
    const q = id % w;
    if (p === x.length && q === y.length) return true;
    const a = x[p];
    const b = y[q];
    // A star may match nothing, or go on taking characters the other side takes.
    if (a?.k === 'star') {
      push(p + 1, q);
      if (b?.k === 'set') push(p, q + 1);
    }
    if (b?.k === 'star') {
      push(p, q + 1);
      if (a?.k === 'set') push(p + 1, q);
    }
    if (a?.k === 'set' && b?.k === 'set' && meets(a.set, b.set)) push(p + 1, q + 1);
  }
  return false;
}

/** globsOverlap with the work it took: states visited at both levels. At most
 *  (|A|+1)(|B|+1) segment pairs, and for each (|x|+1)(|y|+1) character pairs. */
export function globsOverlapCounted(a: string, b: string): { overlap: boolean; steps: number } {
  const A = compiled(a).segs;
  const B = compiled(b).segs;
  const w = B.length + 1;
  const work = { steps: 0 };
  const seen = new Uint8Array((A.length + 1) * w);
  const todo: number[] = [0];
  seen[0] = 1;
  const push = (i: number, j: number): void => {
    if (!seen[i * w + j]) {
      seen[i * w + j] = 1;
      todo.push(i * w + j);
    }
  };
  for (let id = todo.pop(); id !== undefined; id = todo.pop()) {
    work.steps++;
    const i = Math.floor(id / w);
    const j = id % w;
    if (i === A.length && j === B.length) return { overlap: true, steps: work.steps };
    const s = A[i];
    const t = B[j];
    // `**` may match no segment, or swallow one the other side's segment matches (segments are
    // never empty sets: a class cannot exclude every character, so each matches something).
    if (s?.k === 'globstar') {
      push(i + 1, j);
      if (t?.k === 'seg') push(i, j + 1);
    }
    if (t?.k === 'globstar') {
      push(i, j + 1);
      if (s?.k === 'seg') push(i + 1, j);
    }
    if (s?.k === 'seg' && t?.k === 'seg' && segsOverlap(s.atoms, t.atoms, work)) push(i + 1, j + 1);
  }
  return { overlap: false, steps: work.steps };
}

/** Whether some path matches both globs. Invalid globs throw. */
export function globsOverlap(a: string, b: string): boolean {
  return globsOverlapCounted(a, b).overlap;
}
