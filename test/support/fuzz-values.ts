// Values for the door fuzzers (HTTP and MCP, A2A, relay): arbitrary JSON, wrong types, control characters, lone
// surrogates, deep nesting; a body built from a plausible base with fields replaced, removed or
// added; and the run count and seed the soak sets (M4A_FUZZ_RUNS, M4A_FUZZ_SEED).
import fc from 'fast-check';

const NUM_RUNS = Number(process.env.M4A_FUZZ_RUNS ?? 0) || undefined;

/** fast-check's parameters: `n` runs in `npm test`, M4A_FUZZ_RUNS (times `share`, for a property
 *  whose runs are slow) in the soak; M4A_FUZZ_SEED replays. */
export const runs = (n: number, share = 1) => ({
  numRuns: NUM_RUNS !== undefined ? Math.max(1, Math.round(NUM_RUNS * share)) : n,
  includeErrorInReport: true,
  ...(process.env.M4A_FUZZ_SEED ? { seed: Number(process.env.M4A_FUZZ_SEED) } : {}),
});

const CONTROL = fc
  .integer({ min: 0, max: 0x9f })
  .filter((c) => c < 0x20 || c >= 0x7f)
  .map((c) => String.fromCharCode(c));

/** A value nested `depth` levels deep (JSON.parse copes; a recursive walk of it would not). */
export const deep = (depth: number, kind: 'array' | 'object'): unknown => {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = kind === 'array' ? [v] : { a: v };
  return v;
};
const deepValue = fc.tuple(fc.constantFrom(20, 500), fc.constantFrom('array' as const, 'object' as const)).map(([n, k]) => deep(n, k));

export const wrongType = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.constant([]),
  fc.constant({}),
  fc.array(fc.string({ maxLength: 3 }), { maxLength: 3 }),
);

/** What a door's fuzzer tunes: the byte limits it has, the keys its objects are made of. */
export interface ValueTuning {
  /** Byte sizes strings come at (each plus one of `deltas`), in one-, two- and four-byte units. */
  sizes?: readonly number[];
  deltas?: readonly number[];
  units?: readonly string[];
  /** More strings worth trying beside the shared ones. */
  strings?: readonly string[];
  /** Keys of the arbitrary objects (beside random ones). */
  treeKeys?: readonly string[];
  /** How often valueFor takes a plausible value, against 7 for the wrong ones. */
  plausibleWeight?: number;
}

/** The value generators for one door's tuning. */
export function fuzzValues(t: ValueTuning = {}) {
  const units = t.units ?? ['k', 'é', '😀'];
  const sized = fc
    .tuple(fc.constantFrom(...(t.sizes ?? [64, 256, 257, 4096, 65_536])), fc.constantFrom(...(t.deltas ?? [0])), fc.constantFrom(...units))
    .map(([n, delta, unit]) => unit.repeat(Math.max(0, Math.ceil((n + delta) / Buffer.byteLength(unit)))));
  const weirdString = fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.string({ unit: 'binary', maxLength: 12 }),
    fc.string({ unit: fc.oneof(CONTROL, fc.constantFrom('a', ' ', '\n', '\t')), maxLength: 8 }),
    fc.constantFrom('\ud800', 'a\udfff', '\ud83d', '\u0000', '\u2028', '\ufeff', '../..', '%00', '<script>', 'null', '__proto__', 'constructor', 'toString', ...(t.strings ?? [])),
    sized,
  );
  const { tree } = fc.letrec<{ tree: unknown }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.oneof(fc.constant(null), fc.boolean(), fc.double(), fc.integer(), weirdString),
      fc.array(tie('tree'), { maxLength: 3 }),
      fc.dictionary(fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom(...(t.treeKeys ?? ['__proto__', 'toString', 'valueOf', 't', 'id', 'text']))), tie('tree'), {
        maxKeys: 3,
      }),
    ),
  }));
  /** Any value for a field: mostly plausible ones (so requests get past parsing), often wrong. */
  const valueFor = (dict: readonly unknown[]) =>
    fc.oneof(
      { weight: t.plausibleWeight ?? 10, arbitrary: fc.constantFrom(...dict) },
      { weight: 2, arbitrary: weirdString },
      { weight: 2, arbitrary: wrongType },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
      { weight: 1, arbitrary: tree },
      { weight: 1, arbitrary: deepValue },
    );
  return { weirdString, tree, valueFor };
}

export const { weirdString, tree, valueFor } = fuzzValues();

export interface BodySpec {
  /** Plausible bodies to start from. */
  bases: readonly Record<string, unknown>[];
  /** Per field, values worth trying (valueFor adds wrong ones). */
  fields: Record<string, readonly unknown[]>;
}

/** A body: a base as is, or with some of its fields set, removed, or unknown ones added; now and
 *  then something that is no object at all. */
export const bodyOf = (spec: BodySpec): fc.Arbitrary<unknown> => {
  const names = Object.keys(spec.fields);
  // Each edited field takes values from its own dictionary; an undefined one removes the field.
  const edits =
    names.length === 0
      ? fc.constant([] as [string, unknown][])
      : fc.oneof(
          // A base as it is, often: a request that gets past parsing reaches the operation.
          { weight: 1, arbitrary: fc.constant([] as [string, unknown][]) },
          {
            weight: 2,
            arbitrary: fc.array(
              fc.constantFrom(...names).chain((n) => fc.tuple(fc.constant(n), fc.option(valueFor(spec.fields[n]!), { nil: undefined, freq: 6 }))),
              { minLength: 1, maxLength: 3 },
            ),
          },
        );
  const object = fc
    .tuple(
      fc.constantFrom(...spec.bases),
      edits,
      fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), tree, { minKeys: 1, maxKeys: 2 }) }),
    )
    .map(([base, es, extra]) => {
      const b: Record<string, unknown> = structuredClone(base);
      for (const [k, v] of es) {
        if (v === undefined) delete b[k];
        else b[k] = v;
      }
      return extra ? Object.assign(b, extra) : b;
    });
  return fc.oneof({ weight: 24, arbitrary: object }, { weight: 1, arbitrary: tree }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) });
};

/** Counterexamples print through this, so a 1 MiB body shows as its first bytes and its size. */
export const short = <T extends object>(v: T, text: string | Buffer): T =>
  Object.assign(v, { [fc.toStringMethod]: () => `${JSON.stringify(String(text).slice(0, 300))}${text.length > 300 ? ` … (${text.length} bytes)` : ''}` });
