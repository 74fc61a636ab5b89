// No input crashes or stalls the stream door: random bytes, random JSON, and random frames naming
// every operation with arbitrary input, on connections with and without hello. Afterwards a fresh
// connection and HTTP are answered at once, and every frame the door sent is a well-formed answer,
// refusal or event.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { OPERATION_NAMES } from '../src/wire/operations.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { helloRaw, openRaw, type RawStream } from './support/stream-raw.js';
import { tally } from './support/soak-tally.js';

const OPS = [...OPERATION_NAMES.filter((n) => n !== 'daemon.stop'), 'hello', 'cancel', 'subscribe', 'unsubscribe', 'mcp', 'nope', ''];

const frame = fc.record(
  {
    id: fc.oneof(fc.nat(), fc.string({ maxLength: 70 }), fc.constant(null), fc.double(), fc.constant(-1)),
    op: fc.constantFrom(...OPS),
    input: fc.oneof(
      fc.jsonValue({ maxDepth: 4 }),
      fc.dictionary(fc.constantFrom('to', 'subject', 'body', 'after', 'wait_secs', 'id', 'token', 'limit'), fc.jsonValue({ maxDepth: 2 })),
    ),
    agent_session: fc.oneof(fc.string({ maxLength: 140 }), fc.constant(undefined)),
  },
  { requiredKeys: ['op'] },
);

const line = fc.oneof(
  frame.map((f) => JSON.stringify(f)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b.filter((x) => x !== 0x0a)).toString('latin1')),
);

function wellFormed(f: any): boolean {
  if (f.event === 'mail') return typeof f.cursor === 'string' && Array.isArray(f.messages);
  if (!('id' in f)) return false;
  if (f.error) return typeof f.error.code === 'string' && typeof f.error.message === 'string';
  return 'result' in f;
}

describe('stream door fuzz', () => {
  let d: TestDaemon;
  let secret: string;
  before(async () => {
    d = await startTestDaemon();
    secret = (await d.account('claude')).secret;
    await d.account('codex');
  });
  after(() => d.stop());

  it('random lines never crash or stall the door', async () => {
    // 1,500 lines in `npm test`; the soak sends more (M4A_FUZZ_STREAM_LINES) from its own seed.
    const count = Number(process.env.M4A_FUZZ_STREAM_LINES ?? 0) || 1500;
    const seed = Number(process.env.M4A_FUZZ_SEED ?? 16);
    const lines = fc.sample(line, { numRuns: count, seed });
    const t = tally('stream');
    // In batches of 1,500 on fresh connections, so a connection closed by a refusal early in a big
    // run does not swallow the rest of it.
    for (let from = 0; from < lines.length; from += 1500) {
      const batch = lines.slice(from, from + 1500);
      t.requests += batch.length;
      const conns: RawStream[] = [await helloRaw(d.socketPath!, secret), await helloRaw(d.socketPath!, secret), await openRaw(d.socketPath!)];
      batch.forEach((l, i) => conns[i % conns.length]!.write(`${l}\n`));
      // Every connection still answers a request of its own, or was closed by a refusal (too_large,
      // a refused hello): neither stalls.
      for (const c of conns) {
        if (c.isClosed()) continue;
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), 15_000)));
        const r = await Promise.race([c.call('whoami'), c.closed.then(() => 'closed' as const), late]);
        clearTimeout(timer);
        if (r === 'late') t.hangs++;
        assert.ok(r !== 'late', `no answer within 15 s after lines ${from}..${from + batch.length} (seed ${seed})`);
        assert.ok(r === 'closed' || r.result || r.error, 'answered');
      }
      for (const c of conns) {
        for (const f of c.frames) {
          if (f?.error?.code === 'internal') t.status5xx++;
          assert.ok(wellFormed(f), `a well-formed frame: ${JSON.stringify(f).slice(0, 200)}`);
          assert.notEqual(f?.error?.code, 'internal', `an internal error (seed ${seed}): ${JSON.stringify(f).slice(0, 300)}`);
        }
        c.close();
      }
    }
    const fresh = await helloRaw(d.socketPath!, secret);
    assert.equal((await fresh.call('whoami')).result.account, 'claude');
    fresh.close();
    assert.ok((await d.operator.whoami()).account);
  });
});
