// Message items as answers carry them: the presentation written field by field (for speed) gives
// exactly the JSON of its earlier form, kept here as the reference, for any message and view.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isoSecs, presentMessage, senderAddress, type PresentOptions } from '../src/engine/present.js';
import type { StoredMessage } from '../src/store/types.js';
import type { MessageOut } from '../src/wire/ops.js';

const iso = (ms: number): string => new Date(ms).toISOString();

/** The presentation before it was written field by field. */
function reference(m: StoredMessage, ackedAt: number | null, o: PresentOptions = {}): MessageOut {
  const v = o.verbose === true;
  const at = v ? iso : (ms: number) => iso(ms).replace(/\.\d{3}Z$/, 'Z');
  const out: MessageOut = {
    message_id: m.id,
    ...(v || m.threadId !== m.id ? { thread_id: m.threadId } : {}),
    from: o.printed ? o.printed.from(m) : senderAddress(m),
    ...(m.fromSession && (v || o.fromSession) ? { from_session: m.fromSession } : {}),
    ...(v || m.fromKind !== 'agent' ? { from_kind: m.fromKind } : {}),
    ...(v || m.toAddress !== o.reader ? { to: o.printed ? o.printed.to(m) : m.toAddress } : {}),
    subject: m.subject,
    ...(v || m.priority !== 'normal' ? { priority: m.priority } : {}),
    created_at: at(m.createdAt),
    ...(v || ackedAt !== null ? { acked_at: ackedAt === null ? null : at(ackedAt) } : {}),
  };
  if (o.includeBody ?? true) out.body = m.body;
  if (m.replyTo) out.reply_to = m.replyTo;
  if (m.correlation !== null) out.correlation = m.correlation;
  if (m.refs.length) out.refs = m.refs.map((r) => (r.digest === undefined ? { kind: r.kind, locator: r.locator } : { ...r }));
  if (m.task) out.task = { task_id: m.task.task_id, state: m.task.state, version: m.task.version };
  return out;
}

// Times from year 0 to past 9999 (an extended-year ISO string), milliseconds included.
const time = fc.integer({ min: -62_167_219_200_000, max: 300_000_000_000_000 });
const message = fc.record({
  seq: fc.nat(),
  id: fc.constantFrom('m-1', 'm-2'),
  threadId: fc.constantFrom('m-1', 'm-2'),
  fromAccount: fc.constantFrom('alice', 'bob'),
  fromSession: fc.option(fc.constantFrom('s-0123abcd', 's-ffff0000'), { nil: null }),
  fromKind: fc.constantFrom('agent', 'human', 'service'),
  toAddress: fc.constantFrom('bob', '#room', 'bob/s-0123abcd'),
  toKey: fc.constant('a:bob'),
  subject: fc.string(),
  body: fc.string(),
  replyTo: fc.option(fc.constantFrom('m-1', ''), { nil: null }),
  correlation: fc.option(fc.string(), { nil: null }),
  refs: fc.array(
    fc.record({ kind: fc.constantFrom('file', 'url'), locator: fc.string(), digest: fc.option(fc.string(), { nil: undefined }) }, { requiredKeys: ['kind', 'locator'] }),
  ),
  priority: fc.constantFrom('normal', 'urgent'),
  createdAt: time,
  idempotencyKey: fc.constant(null),
  fingerprint: fc.constant(null),
  task: fc.option(fc.record({ task_id: fc.constant('t-1'), state: fc.constantFrom('submitted', 'working'), version: fc.nat() }), { nil: undefined }),
}) as fc.Arbitrary<StoredMessage>;
const options = fc.record(
  {
    includeBody: fc.boolean(),
    reader: fc.option(fc.constantFrom('bob', 'alice'), { nil: null }),
    verbose: fc.boolean(),
    fromSession: fc.boolean(),
    printed: fc.constant({ from: (m: StoredMessage) => `${m.fromAccount}/printed`, to: (m: StoredMessage) => `${m.toAddress}!` }),
  },
  { requiredKeys: [] },
);

describe('message presentation', () => {
  it('gives the JSON of the reference presentation for any message and view', () => {
    fc.assert(
      fc.property(message, fc.option(time, { nil: null }), options, (m, ackedAt, o) => {
        assert.equal(JSON.stringify(presentMessage(m, ackedAt, o)), JSON.stringify(reference(m, ackedAt, o)));
      }),
      { numRuns: 2000 },
    );
  });

  it('prints times to the second, whatever the year', () => {
    for (const ms of [0, 1_700_000_000_123, -62_167_219_200_000, 253_402_300_799_999, 300_000_000_000_000]) assert.equal(isoSecs(ms), iso(ms).replace(/\.\d{3}Z$/, 'Z'));
  });
});
