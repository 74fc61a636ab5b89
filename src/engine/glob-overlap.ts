// Globs of file reservations (`path:` leases): checking and compiling them, and deciding whether
// two globs can match a common path (docs/leases.md, "File reservations"); glob-match.ts matches
// paths against them.
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
// of the two patterns' sizes whatever they are (`**/**/**…` included). The memo tables are reused
// from walk to walk (stamped, never cleared), so a walk costs the states it visits, not the
// product. A glob has at most LEASE_LIMITS.globSegments segments and globWildcards wildcards,
// which bounds what a stranger's glob can make every claim and check pay.
import { LEASE_LIMITS } from '../wire/leases.js';
import { isWellFormed, unsafeChar } from '../wire/text.js';

export type Ranges = readonly (readonly [number, number])[];
/** A set atom's `lit`: its one code point when it holds exactly one, ANY_CP for `?`, else -1. */
export type Atom = { k: 'star' } | { k: 'set'; set: Ranges; lit: number };
export type Segment = { k: 'globstar' } | { k: 'seg'; atoms: Atom[] };

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

export function holds(set: Ranges, cp: number): boolean {
  for (const [lo, hi] of set) if (cp >= lo && cp <= hi) return true;
  return false;
}

/** `lit` of `?`: any character of a segment. */
export const ANY_CP = -2;

const setAtom = (set: Ranges): Atom => ({ k: 'set', set, lit: set === ANY ? ANY_CP : set.length === 1 && set[0]![0] === set[0]![1] ? set[0]![0] : -1 });

/** Whether two set atoms share a character (no class is empty: a glob cannot name a control
 *  character, and every complement holds them). */
const setsMeet = (a: { set: Ranges; lit: number }, b: { set: Ranges; lit: number }): boolean =>
  a.lit === ANY_CP || b.lit === ANY_CP ? true : a.lit >= 0 && b.lit >= 0 ? a.lit === b.lit : meets(a.set, b.set);

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

/** A segment and its wildcards as written (a run of stars is one, a class is one). */
function parseSegment(text: string): { seg: Segment; wild: number } | string {
  if (text === '**') return { seg: { k: 'globstar' }, wild: 1 };
  const cps = Array.from(text, (c) => c.codePointAt(0)!);
  const atoms: Atom[] = [];
  let wild = 0;
  for (let i = 0; i < cps.length;) {
    const cp = cps[i]!;
    if (cp === 0x2a) {
      if (atoms[atoms.length - 1]?.k !== 'star') {
        atoms.push({ k: 'star' });
        wild++;
      }
      i++;
    } else if (cp === 0x3f) {
      atoms.push(setAtom(ANY));
      wild++;
      i++;
    } else if (cp === 0x5b) {
      const c = parseClass(cps, i);
      if (typeof c === 'string') return c;
      atoms.push(setAtom(c.set));
      wild++;
      i = c.end;
    } else {
      atoms.push(setAtom([[cp, cp]]));
      i++;
    }
  }
  return { seg: { k: 'seg', atoms }, wild };
}

export interface Compiled {
  segs: Segment[];
}

/** Why a glob is refused: one line, and for a limit which one with its count; for a character
 *  the rule refuses, its code point. */
export interface GlobProblem {
  reason: string;
  over?: { limit: number; actual: number };
  codePoint?: string;
}

/** A glob compiled, or why not. `claim` adds what a new claim is held to: the text rule and the
 *  segment and wildcard limits, which leases stored before them may not meet (they are matched
 *  and compared as they are, within the requests' work budgets, until they end). */
function compile(glob: string, claim: boolean): Compiled | GlobProblem {
  if (glob === '') return { reason: 'empty' };
  const bytes = Buffer.byteLength(glob, 'utf8');
  if (bytes > LEASE_LIMITS.globBytes) return { reason: `over ${LEASE_LIMITS.globBytes} bytes (${bytes})`, over: { limit: LEASE_LIMITS.globBytes, actual: bytes } };
  if (claim && !isWellFormed(glob)) return { reason: 'not valid Unicode text (lone surrogate)' };
  // The project's rule for one line of text: controls, bidi and invisible format characters,
  // the line and paragraph separators (a glob that displays as another name is refused).
  const bad = claim ? unsafeChar(glob, 'line') : null;
  if (bad) return { reason: bad.reason, codePoint: bad.codePoint };
  for (const ch of glob) if (isControl(ch.codePointAt(0)!)) return { reason: 'a control character (NUL, newline, tab …)' };
  if (glob.includes('\\')) return { reason: 'a backslash: separators are /, and a wildcard is taken literally inside a class ([*])' };
  if (glob.startsWith('/')) return { reason: 'absolute: globs are relative to the repository root' };
  const dir = glob.endsWith('/');
  const parts = (dir ? glob.slice(0, -1) : glob).split('/');
  const maxSegs = LEASE_LIMITS.globSegments;
  if (claim && parts.length > maxSegs) return { reason: `${parts.length} segments, over the limit of ${maxSegs}`, over: { limit: maxSegs, actual: parts.length } };
  const segs: Segment[] = [];
  let wild = 0;
  for (const p of parts) {
    if (p === '') return { reason: 'an empty segment (//, or a lone /)' };
    if (p === '..') return { reason: 'a .. segment: globs stay inside the repository' };
    if (p === '.') return { reason: 'a . segment: write the path without it' };
    const s = parseSegment(p);
    if (typeof s === 'string') return { reason: s };
    wild += s.wild;
    // `**/**` means what `**` means: one keeps the walks small.
    if (s.seg.k === 'globstar' && segs[segs.length - 1]?.k === 'globstar') continue;
    segs.push(s.seg);
  }
  const maxWild = LEASE_LIMITS.globWildcards;
  if (claim && wild > maxWild) return { reason: `${wild} wildcards (*, **, ?, […]), over the limit of ${maxWild}`, over: { limit: maxWild, actual: wild } };
  // A directory covers what is under it (see the head of this file).
  if (dir && segs[segs.length - 1]?.k !== 'globstar') segs.push({ k: 'globstar' });
  return { segs };
}

// Reservations are compared again and again (every claim against every live lease of the
// repository, every staged path against each): keep compiled globs, the least recently used
// dropped first. Callers that compare many keep what they compiled for the request.
const CACHED = 4096;
const cache = new Map<string, Compiled>();

/** The glob compiled (from the cache when it is there). An invalid glob throws. */
export function compiledGlob(glob: string): Compiled {
  const hit = cache.get(glob);
  if (hit) {
    cache.delete(glob);
    cache.set(glob, hit);
    return hit;
  }
  const c = compile(glob, false);
  if (!('segs' in c)) throw new TypeError(`not a valid glob (${c.reason}): check it with checkGlob first`);
  if (cache.size >= CACHED) cache.delete(cache.keys().next().value!);
  cache.set(glob, c);
  return c;
}

/** What is wrong with a glob a claim names, or null when it is valid. */
export function globProblem(glob: string): GlobProblem | null {
  const c = compile(glob, true);
  return 'segs' in c ? null : c;
}

/** What is wrong with a glob (one line), or null when it is valid. */
export function checkGlob(glob: string): string | null {
  return globProblem(glob)?.reason ?? null;
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

/** Text every path the glob matches starts with (for a cheap test before a match): the
 *  literal start, up to its first wildcard; before a `**` without the `/`, since `src/**` and
 *  `src/parser/` also match `src` and `src/parser` themselves. */
export function globPrefix(glob: string | Compiled): string {
  const { segs } = typeof glob === 'string' ? compiledGlob(glob) : glob;
  let out = '';
  for (const [i, s] of segs.entries()) {
    if (s.k === 'globstar') return out;
    if (i > 0) out += '/';
    for (const a of s.atoms) {
      if (a.k === 'star' || a.lit < 0) return out; // a wildcard, or a class of several
      out += String.fromCodePoint(a.lit);
    }
  }
  return out;
}

/** A memo of visited states reused from walk to walk: a state is visited in this walk when its
 *  stamp is this walk's, so starting a walk costs nothing, whatever the table's size. */
class Visited {
  private stamps = new Uint32Array(64);
  private stamp = 0;

  begin(size: number): void {
    if (size > this.stamps.length) this.stamps = new Uint32Array(Math.max(size, this.stamps.length * 2));
    if (this.stamp === 0xffffffff) {
      this.stamps.fill(0);
      this.stamp = 0;
    }
    this.stamp++;
  }

  /** True the first time `i` is seen in this walk. */
  first(i: number): boolean {
    if (this.stamps[i] === this.stamp) return false;
    this.stamps[i] = this.stamp;
    return true;
  }
}

/** States to visit, as (p, q) pairs. */
class Todo {
  buf = new Int32Array(128);
  n = 0;

  push(p: number, q: number): void {
    if (this.n + 2 > this.buf.length) {
      const b = new Int32Array(this.buf.length * 2);
      b.set(this.buf);
      this.buf = b;
    }
    this.buf[this.n++] = p;
    this.buf[this.n++] = q;
  }
}

// One table and stack for the walk over segment pairs, one for the walk inside a pair of
// segments (which runs to its end inside one step of the outer walk). Everything is synchronous.
const outerSeen = new Visited();
const innerSeen = new Visited();
const outerTodo = new Todo();
const innerTodo = new Todo();

function visit(seen: Visited, todo: Todo, w: number, p: number, q: number): void {
  if (seen.first(p * w + q)) todo.push(p, q);
}

/** Whether some segment matches both. The walk may accept the empty string, but only where both
 *  sides are nothing but stars, and those also share any one character: no flag is needed. */
function segsOverlap(x: Atom[], y: Atom[], work: Work): boolean {
  const w = y.length + 1;
  const todo = innerTodo;
  todo.n = 0;
  innerSeen.begin((x.length + 1) * w);
  visit(innerSeen, todo, w, 0, 0);
  while (todo.n > 0) {
    if (++work.steps > work.limit) return false; // the caller sees the limit passed
    const q = todo.buf[--todo.n]!;
    const p = todo.buf[--todo.n]!;
    if (p === x.length && q === y.length) return true;
    const a = x[p];
    const b = y[q];
    // A star may match nothing, or go on taking characters the other side takes.
    if (a?.k === 'star') {
      visit(innerSeen, todo, w, p + 1, q);
      if (b?.k === 'set') visit(innerSeen, todo, w, p, q + 1);
    }
    if (b?.k === 'star') {
      visit(innerSeen, todo, w, p, q + 1);
      if (a?.k === 'set') visit(innerSeen, todo, w, p + 1, q);
    }
    if (a?.k === 'set' && b?.k === 'set' && setsMeet(a, b)) visit(innerSeen, todo, w, p + 1, q + 1);
  }
  return false;
}

/** Work done so far, and where to give up. */
export interface Work {
  steps: number;
  limit: number;
}

/** Overlap of two compiled globs, adding the states it visits to `work.steps`; undefined when
 *  it passed `work.limit` before it knew. */
export function compiledOverlap(a: Compiled, b: Compiled, work: Work): boolean | undefined {
  const A = a.segs;
  const B = b.segs;
  const w = B.length + 1;
  const todo = outerTodo;
  todo.n = 0;
  outerSeen.begin((A.length + 1) * w);
  visit(outerSeen, todo, w, 0, 0);
  while (todo.n > 0) {
    if (++work.steps > work.limit) return undefined;
    const j = todo.buf[--todo.n]!;
    const i = todo.buf[--todo.n]!;
    if (i === A.length && j === B.length) return true;
    const s = A[i];
    const t = B[j];
    // `**` may match no segment, or swallow one the other side's segment matches (segments are
    // never empty sets: a class cannot exclude every character, so each matches something).
    if (s?.k === 'globstar') {
      visit(outerSeen, todo, w, i + 1, j);
      if (t?.k === 'seg') visit(outerSeen, todo, w, i, j + 1);
    }
    if (t?.k === 'globstar') {
      visit(outerSeen, todo, w, i, j + 1);
      if (s?.k === 'seg') visit(outerSeen, todo, w, i + 1, j);
    }
    if (s?.k === 'seg' && t?.k === 'seg' && segsOverlap(s.atoms, t.atoms, work)) visit(outerSeen, todo, w, i + 1, j + 1);
    if (work.steps > work.limit) return undefined;
  }
  return false;
}

/** globsOverlap with the work it took: states visited at both levels. At most
 *  (|A|+1)(|B|+1) segment pairs, and for each (|x|+1)(|y|+1) character pairs. */
export function globsOverlapCounted(a: string, b: string): { overlap: boolean; steps: number } {
  const work = { steps: 0, limit: Infinity };
  const overlap = compiledOverlap(compiledGlob(a), compiledGlob(b), work) === true;
  return { overlap, steps: work.steps };
}

/** Whether some path matches both globs. Invalid globs throw. */
export function globsOverlap(a: string, b: string): boolean {
  return globsOverlapCounted(a, b).overlap;
}
