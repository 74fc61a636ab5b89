// Matching paths against the globs of file reservations (syntax in glob-overlap.ts). The guard's
// check asks about up to 10,000 paths against every reservation of a repository, so each glob is
// turned once into a matcher and each path once into code points, and a match allocates nothing.
//
// Both levels have one shape: fixed-length pieces separated by stars. Inside a segment a piece is
// a run of characters and classes between `*`s; across segments it is a run of segments between
// `**`s. The first piece is held to the start and the last to the end unless a star stands
// there; the pieces between are placed leftmost-first, which is exact because the star after a
// piece takes any run, so a later placement never leaves more room for the rest. The work is at
// most the text's length times the longest piece, and a glob has at most 16 wildcards. A piece
// is compared literal parts first (a run of segments: its wildcard-free segments first), so a
// stranger's `**/?/?/…/x/**` costs each path about its length, not its length times the run.
import { ANY_CP, compiledGlob, holds, type Compiled, type Ranges, type Segment } from './glob-overlap.js';

/** Characters and classes between stars: `lits[k]` is a code point, ANY_CP, or -1 for
 *  `sets[k]`; `order` compares the literal ones first. */
interface Piece {
  lits: Int32Array;
  sets: (Ranges | null)[];
  order: Int32Array;
}

/** Indices of `n` items, those `first` says first, each group in its order. */
function firstOf(n: number, first: (k: number) => boolean): Int32Array {
  const out: number[] = [];
  for (let k = 0; k < n; k++) if (first(k)) out.push(k);
  for (let k = 0; k < n; k++) if (!first(k)) out.push(k);
  return Int32Array.from(out);
}

/** A segment (not `**`) as pieces: `lead` and `trail` say whether a `*` opens or closes it. */
interface SegMatcher {
  pieces: Piece[];
  lead: boolean;
  trail: boolean;
  /** The fewest characters it matches. */
  min: number;
}

/** Segments between `**`s, compared in `order`. */
interface Run {
  segs: SegMatcher[];
  order: Int32Array;
}

/** A glob as runs of segments between `**`s. */
export interface GlobMatcher {
  pieces: Run[];
  lead: boolean;
  trail: boolean;
  /** The fewest segments it matches. */
  min: number;
}

/** A path as code points with the bounds of its segments. */
export interface PreparedPath {
  cps: Int32Array;
  starts: Int32Array;
  ends: Int32Array;
}

function segMatcher(s: Extract<Segment, { k: 'seg' }>): SegMatcher {
  const pieces: Piece[] = [];
  let run: { lit: number; set: Ranges }[] = [];
  const close = (): void => {
    const lits = Int32Array.from(run, (a) => a.lit);
    if (run.length > 0) pieces.push({ lits, sets: run.map((a) => (a.lit === -1 ? a.set : null)), order: firstOf(lits.length, (k) => lits[k]! >= 0) });
    run = [];
  };
  for (const a of s.atoms) {
    if (a.k === 'star') close();
    else run.push(a);
  }
  close();
  return {
    pieces,
    lead: s.atoms[0]?.k === 'star',
    trail: s.atoms[s.atoms.length - 1]?.k === 'star',
    min: pieces.reduce((n, p) => n + p.lits.length, 0),
  };
}

// Matchers of compiled globs, kept as long as the compiled glob is.
const matchers = new WeakMap<Compiled, GlobMatcher>();

/** The matcher of a glob (valid: an invalid glob throws). */
export function globMatcher(glob: string): GlobMatcher {
  const c = compiledGlob(glob);
  const hit = matchers.get(c);
  if (hit) return hit;
  const pieces: Run[] = [];
  let run: SegMatcher[] = [];
  const close = (): void => {
    const segs = run;
    const literal = (k: number): boolean => !segs[k]!.lead && !segs[k]!.trail && segs[k]!.pieces.every((p) => p.lits.every((l) => l >= 0));
    if (segs.length > 0) pieces.push({ segs, order: firstOf(segs.length, literal) });
    run = [];
  };
  for (const s of c.segs) {
    if (s.k === 'seg') run.push(segMatcher(s));
    else close();
  }
  close();
  const m: GlobMatcher = {
    pieces,
    lead: c.segs[0]?.k === 'globstar',
    trail: c.segs[c.segs.length - 1]?.k === 'globstar',
    min: pieces.reduce((n, p) => n + p.segs.length, 0),
  };
  matchers.set(c, m);
  return m;
}

/** The path split once for every glob it is matched against; null for an empty segment (which
 *  no glob matches). */
export function preparePath(path: string): PreparedPath | null {
  const cps = new Int32Array(path.length);
  let n = 0;
  let parts = 1;
  for (const ch of path) {
    const cp = ch.codePointAt(0)!;
    if (cp === 0x2f) parts++;
    cps[n++] = cp;
  }
  const starts = new Int32Array(parts);
  const ends = new Int32Array(parts);
  for (let i = 0, k = 0; i <= n; i++) {
    if (i === n || cps[i] === 0x2f) {
      ends[k] = i;
      if (ends[k]! === starts[k]!) return null;
      if (++k < parts) starts[k] = i + 1;
    }
  }
  return { cps: cps.subarray(0, n), starts, ends };
}

/** Piece `p` at cps[at…]: the caller has checked it fits. */
function pieceAt(p: Piece, cps: Int32Array, at: number, work: { steps: number }): boolean {
  const n = p.lits.length;
  for (let i = 0; i < n; i++) {
    const k = p.order[i]!;
    const c = cps[at + k]!;
    const lit = p.lits[k]!;
    if (lit >= 0 ? c !== lit : lit !== ANY_CP && !holds(p.sets[k]!, c)) {
      work.steps += i + 1;
      return false;
    }
  }
  work.steps += n;
  return true;
}

/** Whether the segment matches cps[lo, hi). */
function segAt(s: SegMatcher, cps: Int32Array, lo: number, hi: number, work: { steps: number }): boolean {
  work.steps++;
  const n = hi - lo;
  const P = s.pieces;
  if (n < s.min || n === 0) return false;
  if (!s.lead && !s.trail && P.length === 1) return n === s.min && pieceAt(P[0]!, cps, lo, work);
  let i = 0;
  let pos = lo;
  let end = hi;
  let last = P.length;
  if (!s.lead) {
    if (!pieceAt(P[0]!, cps, lo, work)) return false;
    pos = lo + P[0]!.lits.length;
    i = 1;
  }
  if (!s.trail) {
    const t = P[P.length - 1]!;
    end = hi - t.lits.length;
    last = P.length - 1;
    if (end < pos || !pieceAt(t, cps, end, work)) return false;
  }
  for (; i < last; i++) {
    const p = P[i]!;
    const len = p.lits.length;
    let at = pos;
    while (at + len <= end && !pieceAt(p, cps, at, work)) at++;
    if (at + len > end) return false;
    pos = at + len;
  }
  return true;
}

/** Run `r` of segments at path segment `at`: the caller has checked it fits. */
function runAt(r: Run, p: PreparedPath, at: number, work: { steps: number }): boolean {
  for (let i = 0; i < r.order.length; i++) {
    const k = r.order[i]!;
    if (!segAt(r.segs[k]!, p.cps, p.starts[at + k]!, p.ends[at + k]!, work)) return false;
  }
  return true;
}

/** Whether the glob covers the path, adding what it compared to `work.steps`. */
export function matchPrepared(g: GlobMatcher, p: PreparedPath, work: { steps: number }): boolean {
  const n = p.starts.length;
  const R = g.pieces;
  work.steps++;
  if (n < g.min) return false;
  if (R.length === 0) return true; // `**` alone
  if (!g.lead && !g.trail && R.length === 1) return n === g.min && runAt(R[0]!, p, 0, work);
  let i = 0;
  let pos = 0;
  let end = n;
  let last = R.length;
  if (!g.lead) {
    if (!runAt(R[0]!, p, 0, work)) return false;
    pos = R[0]!.segs.length;
    i = 1;
  }
  if (!g.trail) {
    const t = R[R.length - 1]!;
    end = n - t.segs.length;
    last = R.length - 1;
    if (end < pos || !runAt(t, p, end, work)) return false;
  }
  for (; i < last; i++) {
    const r = R[i]!;
    let at = pos;
    const len = r.segs.length;
    while (at + len <= end && !runAt(r, p, at, work)) at++;
    if (at + len > end) return false;
    pos = at + len;
  }
  return true;
}

/** Whether `path` (relative, `/`-separated) is one the glob covers. An invalid glob throws. */
export function globMatches(glob: string, path: string): boolean {
  const g = globMatcher(glob);
  const p = preparePath(path);
  return p !== null && matchPrepared(g, p, { steps: 0 });
}
