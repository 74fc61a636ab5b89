// Globs of file reservations: which are refused, which paths a glob covers, and whether two globs
// can cover a common path, checked against a brute force over every short path.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkGlob, checkPath, compiledGlob, compiledOverlap, globPrefix, globProblem, globsOverlap, globsOverlapCounted } from '../src/engine/glob-overlap.js';
import { globMatches } from '../src/engine/glob-match.js';
import { LEASE_LIMITS } from '../src/wire/leases.js';

describe('checkGlob', () => {
  it('refuses what cannot name files inside the repository, naming the problem', () => {
    const refused: [string, RegExp][] = [
      ['', /empty/],
      ['/etc/passwd', /absolute/],
      ['src/../secrets', /\.\. segment/],
      ['..', /\.\. segment/],
      ['./src', /\. segment/],
      ['src//a.ts', /empty segment/],
      ['/', /absolute/],
      ['src\\a.ts', /backslash/],
      ['src/[ab', /unbalanced \[/],
      ['src/[]', /unbalanced \[/],
      ['src/[a/b]', /unbalanced \[/],
      ['src/[b-a]', /reversed range/],
      ['src/a\0b', /control character/],
      ['src/a\nb', /control character/],
      ['src/\u0085', /control character/],
      // The project's rule for one line of text: nothing that reorders, hides or breaks it.
      ['docs/\u202egnp.exe', /U\+202E \(a bidirectional control\)/],
      ['docs/a\u200b.md', /U\+200B \(an invisible format character\)/],
      ['docs/\ufeffa.md', /U\+FEFF/],
      ['docs/a\u2028b', /U\+2028 \(the line separator\)/],
      ['docs/a\u2029b', /U\+2029 \(the paragraph separator\)/],
      ['docs/a\u{e0041}', /U\+E0041 \(a tag character\)/],
      ['docs/\ud800.md', /lone surrogate/],
      ['a'.repeat(LEASE_LIMITS.globBytes + 1), new RegExp(`over ${LEASE_LIMITS.globBytes} bytes`)],
      ['é'.repeat(LEASE_LIMITS.globBytes / 2 + 1), /over .* bytes/],
    ];
    for (const [g, problem] of refused) assert.match(checkGlob(g) ?? 'accepted', problem, JSON.stringify(g));
  });

  it('accepts ordinary globs, classes with literal ] and -, and the longest allowed', () => {
    for (const g of ['src/**', 'src/*.ts', '**', 'src/parser', 'src/parser/', 'docs/[]]x', 'a/[!-]', 'a/[a-]', '[*]', '{a,b}', 'a'.repeat(LEASE_LIMITS.globBytes)])
      assert.equal(checkGlob(g), null, g);
  });

  it(`at most ${LEASE_LIMITS.globSegments} segments and ${LEASE_LIMITS.globWildcards} wildcards, at and over the edges, named with the limit`, () => {
    const segs = (n: number, last = 'x') => [...Array.from({ length: n - 1 }, (_, i) => `d${i}`), last].join('/');
    assert.equal(checkGlob(segs(32)), null);
    assert.equal(checkGlob(`${segs(32)}/`), null, 'a trailing / adds no segment');
    assert.deepEqual(globProblem(segs(33))?.over, { limit: 32, actual: 33 });
    assert.match(checkGlob(segs(33))!, /33 segments, over the limit of 32/);
    // `*` (a run of stars is one), `**`, `?` and a class each count one.
    const wild16 = ['*.ts', '**', '?', '[ab]', 'a***b', ...Array(11).fill('?')].join('/');
    assert.equal(checkGlob(wild16), null, wild16);
    assert.deepEqual(globProblem(`${wild16}/[xy]`)?.over, { limit: 16, actual: 17 });
    assert.deepEqual(globProblem('*?'.repeat(8) + 'a')?.over, undefined, '16 in one segment');
    assert.deepEqual(globProblem('*?'.repeat(8) + '*')?.over, { limit: 16, actual: 17 });
    assert.deepEqual(globProblem('**/'.repeat(17) + 'a')?.over, { limit: 16, actual: 17 }, '**/** counts as written');
    assert.equal(checkGlob('[*][?][[]x'), null, 'a class counts, what it holds does not');
    assert.deepEqual(globProblem('a'.repeat(LEASE_LIMITS.globBytes + 1))?.over, { limit: 1024, actual: 1025 });
    assert.equal(globProblem('docs/\u202ex')?.codePoint, 'U+202E');
  });

  it('an invalid glob is never matched silently: it throws', () => {
    assert.throws(() => globMatches('/abs', 'abs'), /not a valid glob \(absolute/);
    assert.throws(() => globsOverlap('src/**', 'src/[x'), /unbalanced/);
  });

  it('checkPath refuses paths a guard cannot ask about', () => {
    for (const p of ['', '/a', 'a//b', 'a/', './a', 'a/../b', 'a\tb', 'a'.repeat(LEASE_LIMITS.pathBytes + 1)]) assert.notEqual(checkPath(p), null, p);
    assert.equal(checkPath('src/a b/ü.ts'), null);
  });
});

describe('globMatches', () => {
  it('* stays inside a segment, ** spans segments (zero or more), ? is one character', () => {
    const cases: [string, string, boolean][] = [
      ['src/*.ts', 'src/a.ts', true],
      ['src/*.ts', 'src/x/y.ts', false],
      ['src/*.ts', 'src/.ts', true],
      ['src/**', 'src/a.ts', true],
      ['src/**', 'src/x/y/z.ts', true],
      ['src/**', 'src', true],
      ['src/**', 'srcx/a.ts', false],
      ['src/**/*.ts', 'src/a.ts', true],
      ['src/**/*.ts', 'src/a/b/c.ts', true],
      ['src/**/*.ts', 'src/a/b/c.js', false],
      ['**/test/*.ts', 'test/a.ts', true],
      ['**/test/*.ts', 'pkg/x/test/a.ts', true],
      ['src/a**b', 'src/axyb', true],
      ['src/a**b', 'src/ax/yb', false],
      ['src/?.ts', 'src/a.ts', true],
      ['src/?.ts', 'src/ab.ts', false],
      ['src/?.ts', 'src/é.ts', true],
      ['*', '.env', true],
      ['*', 'a/b', false],
    ];
    for (const [g, p, want] of cases) assert.equal(globMatches(g, p), want, `${g} ~ ${p}`);
  });

  it('character classes: sets, ranges, negation, literal ] - * inside', () => {
    const cases: [string, string, boolean][] = [
      ['v[12].ts', 'v1.ts', true],
      ['v[12].ts', 'v3.ts', false],
      ['v[0-9].ts', 'v7.ts', true],
      ['v[0-9].ts', 'va.ts', false],
      ['v[!0-9].ts', 'va.ts', true],
      ['v[!0-9].ts', 'v7.ts', false],
      ['v[^0-9].ts', 'v7.ts', false],
      ['[]]', ']', true],
      ['[a-]', '-', true],
      ['[*]', '*', true],
      ['[*]', 'x', false],
      ['a/[!x]', 'a/b/c', false],
    ];
    for (const [g, p, want] of cases) assert.equal(globMatches(g, p), want, `${g} ~ ${p}`);
  });

  it('is case-sensitive', () => {
    assert.equal(globMatches('README.md', 'readme.md'), false);
    assert.equal(globMatches('src/*.TS', 'src/a.ts'), false);
    assert.equal(globMatches('[Rr]eadme.md', 'readme.md'), true);
    assert.equal(globMatches('[A-Z]*', 'readme'), false);
  });

  it('a glob ending in / covers everything under it; any other means exactly what it matches', () => {
    assert.equal(globMatches('src/parser/', 'src/parser'), true);
    assert.equal(globMatches('src/parser/', 'src/parser/lex.ts'), true);
    assert.equal(globMatches('src/parser/', 'src/parser/a/b.ts'), true);
    assert.equal(globMatches('src/parser/', 'src/parser-old/lex.ts'), false);
    assert.equal(globMatches('src/*/', 'src/x/b.ts'), true);
    assert.equal(globMatches('src/**/', 'src/x/b.ts'), true);
    assert.equal(globMatches('src/parser', 'src/parser'), true);
    assert.equal(globMatches('src/parser', 'src/parser/lex.ts'), false);
    assert.equal(globMatches('src/*', 'src/x/b.ts'), false);
  });

  it('globPrefix: what every matching path starts with', () => {
    const cases: [string, string][] = [
      ['src/*.ts', 'src/'],
      ['src/a.ts', 'src/a.ts'],
      ['src/**', 'src'],
      ['src/parser/', 'src/parser'],
      ['src/**/x.ts', 'src'],
      ['*.md', ''],
      ['**', ''],
      ['docs/v[12]/a', 'docs/v'],
      ['docs/[v]x', 'docs/vx'],
    ];
    for (const [g, want] of cases) assert.equal(globPrefix(g), want, g);
  });

  it('never matches a path with an empty segment', () => {
    assert.equal(globMatches('**', 'a//b'), false);
    assert.equal(globMatches('*/a', '/a'), false);
  });
});

describe('globsOverlap', () => {
  it("the issue's cases, classes and case", () => {
    const cases: [string, string, boolean][] = [
      ['src/**', 'src/a.ts', true],
      ['src/*.ts', 'src/x/y.ts', false],
      ['src/*.ts', 'src/**', true],
      ['src/*.ts', 'src/*.js', false],
      ['src/*.ts', '**/a.*', true],
      ['src/parser/**', 'src/parser', true],
      ['src/parser/', 'src/parser/lex.ts', true],
      ['src/parser/', '**/*.md', true],
      ['src/parser', 'src/parser/lex.ts', false],
      ['src/parser', 'src/parse', false],
      // A file reservation does not reach under itself: no false conflict with **/… globs.
      ['src/a.ts', '**/*.md', false],
      ['src/a.ts', '**/*.ts', true],
      ['src/[ab].ts', 'src/[bc].ts', true],
      ['src/[ab].ts', 'src/[cd].ts', false],
      ['src/[!a].ts', 'src/a.ts', false],
      ['src/[!a].ts', 'src/[a-c].ts', true],
      ['src/[a-m]*', 'src/[n-z]*', false],
      ['README.md', 'readme.md', false],
      ['[Rr]eadme.md', 'readme.md', true],
      ['src/*', 'src/*', true],
      ['*/*', 'a/*', true],
      ['a*', '*b', true],
      ['a*b', '*c*', true],
      ['a?', 'a', false],
      ['a?', 'ab', true],
      ['**/x', 'y', false],
      ['**/x', 'y/', true],
      ['**/x', 'y/**', true],
    ];
    for (const [a, b, want] of cases) {
      assert.equal(globsOverlap(a, b), want, `${a} ∩ ${b}`);
      assert.equal(globsOverlap(b, a), want, `${b} ∩ ${a}`);
    }
  });

  it('stays polynomial on adversarial patterns at the limits (the work is bounded by the product of their sizes)', () => {
    const n = LEASE_LIMITS.globWildcards - 1;
    const pairs: [string, string, boolean][] = [
      [Array(n).fill('**').join('/') + '/x', Array(n).fill('**').join('/') + '/y', false],
      [Array(8).fill('**/a').join('/') + '/c', Array(8).fill('a/**').join('/') + '/b', false],
      ['*a'.repeat(n) + '*c', '*a'.repeat(n) + '*b', false],
      [`${'*a'.repeat(8)}/${'?'.repeat(8)}`, `${'a*'.repeat(n)}/**`, true],
      [Array(8).fill('*a*').join('/'), Array(n).fill('**').join('/') + '/b', false],
      // The longest allowed, every wildcard spent in front of a long literal run.
      ['*' + 'a*'.repeat(n) + 'a'.repeat(LEASE_LIMITS.globBytes - 2 * n - 2) + 'c', '*' + 'a*'.repeat(n) + 'a'.repeat(LEASE_LIMITS.globBytes - 2 * n - 2) + 'b', false],
      [[...Array(n).fill('*a'), ...Array(16).fill('a')].join('/') + '/c', [...Array(n).fill('a*'), ...Array(16).fill('a')].join('/') + '/c', true],
    ];
    for (const [a, b, want] of pairs) {
      assert.equal(checkGlob(a), null, a.slice(0, 40));
      assert.equal(checkGlob(b), null, b.slice(0, 40));
      const r = globsOverlapCounted(a, b);
      assert.equal(r.overlap, want, `${a.slice(0, 40)}… ∩ ${b.slice(0, 40)}…`);
      // (|A|+1)(|B|+1) segment pairs, plus (|x|+1)(|y|+1) character pairs for each pair of
      // segments (x of A, y of B), whose sum is at most (|a|+1)(|b|+1) in characters.
      const bound = (a.length + 2) * (b.length + 2) + (a.length + 1) * (b.length + 1);
      assert.ok(r.steps <= bound, `steps ${r.steps} > ${bound}`);
    }
  });

  it('a walk given a limit stops there and says it does not know; the tables it reuses forget nothing between walks', () => {
    const a = compiledGlob('*' + 'a*'.repeat(15) + 'a'.repeat(500) + 'c');
    const b = compiledGlob('*' + 'a*'.repeat(15) + 'a'.repeat(500) + 'b');
    const full = { steps: 0, limit: Infinity };
    assert.equal(compiledOverlap(a, b, full), false);
    const cut = { steps: 0, limit: Math.floor(full.steps / 2) };
    assert.equal(compiledOverlap(a, b, cut), undefined);
    assert.ok(cut.steps <= cut.limit + 1, `stopped at ${cut.steps}`);
    // The same walks again, interleaved with others, give the same answers and counts.
    for (let i = 0; i < 3; i++) {
      assert.equal(globsOverlap('src/**', 'src/a.ts'), true);
      const again = { steps: 0, limit: Infinity };
      assert.equal(compiledOverlap(a, b, again), false);
      assert.equal(again.steps, full.steps);
    }
  });
});

// ---- property: globsOverlap equals a brute force over every short path ----
//
// Globs are 1 to 4 tokens from a, b, /, *, **, ?, [ab], [!a]; paths use the characters a, b, /.
// The brute force is exact for these sizes: (1) characters: every class or wildcard here holds a
// or b, and two atoms that share a character share a or b, so any common path stays common with
// each character replaced by a or b. (2) length: a shortest common path, followed through both
// patterns, has each segment paired with a segment of the other glob or swallowed by a `**`, and
// inside a segment every character advances at least one side's atom (a character that advances
// neither, under two stars, is only needed when both sides are stars and then once), so it holds
// at most as many characters as the two globs have tokens, plus one: with 4 + 4 tokens, 9.
// The glob side of the brute force is a regular expression built from the tokens (not from the
// matcher under test), with the same rules: ** as a whole segment, a trailing / covers what is
// under it.

const TOKENS = ['a', 'b', '/', '*', '**', '?', '[ab]', '[!a]'] as const;

function reference(tokens: readonly string[]): RegExp | null {
  const dir = tokens[tokens.length - 1] === '/';
  const body = dir ? tokens.slice(0, -1) : tokens;
  const segs: string[][] = [[]];
  for (const t of body) {
    if (t === '/') segs.push([]);
    else segs[segs.length - 1]!.push(t);
  }
  if (body.length === 0 || body[0] === '/' || segs.some((s) => s.length === 0)) return null; // empty, absolute or //
  const piece = (t: string): string => ({ '*': '[^/]*', '**': '[^/]*', '?': '[^/]', '[ab]': '[ab]', '[!a]': '[^/a]' })[t] ?? t;
  let re = segs.map((s) => (s.join('') === '**' ? '(?:/[^/]+)*' : `/(?=[^/])${s.map(piece).join('')}`)).join('');
  if (dir) re += '(?:/[^/]+)*';
  return new RegExp(`^${re}$`);
}

function allPaths(maxLen: number): string[][] {
  const byLen: string[][] = [['']];
  for (let n = 1; n <= maxLen; n++) byLen.push(byLen[n - 1]!.flatMap((p) => ['a', 'b', '/'].map((c) => p + c)));
  // Valid paths only: no empty segment, no leading or trailing /.
  return byLen.map((ps) => ps.filter((p) => p !== '' && !p.split('/').includes('')));
}

describe('globsOverlap against a brute force', () => {
  const MAX_TOKENS = 4;
  const paths = allPaths(2 * MAX_TOKENS + 1);
  const glob = fc.array(fc.constantFrom(...TOKENS), { minLength: 1, maxLength: MAX_TOKENS });

  it('checkGlob and globMatches agree with the reference on every path up to 7 characters, and globPrefix starts each match', () => {
    const short = paths.slice(0, 8).flat();
    fc.assert(
      fc.property(glob, (tokens) => {
        const g = tokens.join('');
        const re = reference(tokens);
        assert.equal(checkGlob(g) === null, re !== null, `valid? ${g}`);
        if (!re) return;
        const start = globPrefix(g);
        for (const p of short) {
          const hit = re.test(`/${p}`);
          assert.equal(globMatches(g, p), hit, `${g} ~ ${p}`);
          if (hit) assert.ok(p.startsWith(start), `${p} matches ${g} but does not start with ${start}`);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('globMatches agrees with the reference on longer globs and paths (the matcher places pieces leftmost-first)', () => {
    const long = fc.array(fc.constantFrom(...TOKENS), { minLength: 1, maxLength: 14 });
    const path = fc.array(fc.constantFrom('a', 'b', '/', 'ab', 'ba', 'aa'), { minLength: 1, maxLength: 12 }).map((xs) => xs.join(''));
    fc.assert(
      fc.property(long, fc.array(path, { minLength: 1, maxLength: 20 }), (tokens, ps) => {
        const g = tokens.join('');
        const re = reference(tokens);
        fc.pre(re !== null && checkGlob(g) === null);
        for (const p of ps) if (checkPath(p) === null) assert.equal(globMatches(g, p), re.test(`/${p}`), `${g} ~ ${p}`);
      }),
      { numRuns: 3000 },
    );
  });

  it('globsOverlap(a, b) iff some path up to |a| + |b| + 1 characters matches both', () => {
    fc.assert(
      fc.property(glob, glob, (ta, tb) => {
        const ra = reference(ta);
        const rb = reference(tb);
        fc.pre(ra !== null && rb !== null);
        const bound = ta.length + tb.length + 1;
        const witness = paths
          .slice(0, bound + 1)
          .flat()
          .find((p) => ra.test(`/${p}`) && rb.test(`/${p}`));
        const [a, b] = [ta.join(''), tb.join('')];
        assert.equal(globsOverlap(a, b), witness !== undefined, `${a} ∩ ${b}: witness ${witness}`);
        assert.equal(globsOverlap(b, a), witness !== undefined, 'symmetric');
      }),
      { numRuns: 2000 },
    );
  });
});
