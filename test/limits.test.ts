// Every limit at its bound (accepted) and one over (too_large, naming field, limit and actual),
// and refusals change nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LIMITS } from '../src/wire/limits.js';
import { MailError } from '../src/wire/errors.js';
import type { MailClient } from '../src/client/http-client.js';
import { raw, startTestDaemon, type TestDaemon } from './support/test-daemon.js';

const sel = (n: number) => 'k'.repeat(n);
// 'é' is two UTF-8 bytes: limits count bytes, not characters.
const twoByte = (bytes: number) => 'é'.repeat(bytes / 2);

describe('limits', () => {
  let d: TestDaemon;
  let a: MailClient;
  let b: MailClient;
  let bSecret: string;
  before(async () => {
    d = await startTestDaemon();
    a = (await d.account('alpha')).client;
    const bb = await d.account('beta');
    b = bb.client;
    bSecret = bb.secret;
  });
  after(() => d.stop());

  async function expectTooLarge(p: Promise<unknown>, field: string, limit: number, actual: number): Promise<void> {
    const err = await p.then(
      () => assert.fail(`expected too_large on ${field}`),
      (e: unknown) => e,
    );
    assert.ok(err instanceof MailError, String(err));
    assert.equal(err.code, 'too_large', err.message);
    assert.deepEqual({ field: err.details.field, limit: err.details.limit, actual: err.details.actual }, { field, limit, actual });
  }

  const base = { to: 'beta', subject: 's', body: 'b' };
  const cases: { field: string; limit: number; make: (n: number) => Record<string, unknown> }[] = [
    { field: 'subject', limit: LIMITS.subjectBytes, make: (n) => ({ ...base, subject: twoByte(n) }) },
    { field: 'body', limit: LIMITS.bodyBytes, make: (n) => ({ ...base, body: twoByte(n) }) },
    { field: 'correlation', limit: LIMITS.correlationBytes, make: (n) => ({ ...base, correlation: twoByte(n) }) },
    { field: 'idempotency_key', limit: LIMITS.selectorBytes, make: (n) => ({ ...base, idempotency_key: sel(n) }) },
    { field: 'refs.0.kind', limit: LIMITS.selectorBytes, make: (n) => ({ ...base, refs: [{ kind: sel(n), locator: 'l' }] }) },
    { field: 'refs.0.locator', limit: LIMITS.refLocatorBytes, make: (n) => ({ ...base, refs: [{ kind: 'k', locator: twoByte(n) }] }) },
    { field: 'refs.0.digest', limit: LIMITS.refDigestBytes, make: (n) => ({ ...base, refs: [{ kind: 'k', locator: 'l', digest: 'a'.repeat(n) }] }) },
    { field: 'refs', limit: LIMITS.refsCount, make: (n) => ({ ...base, refs: Array.from({ length: n }, () => ({ kind: 'k', locator: 'l' })) }) },
  ];
  for (const c of cases) {
    it(`${c.field}: ${c.limit} accepted, ${c.limit + (c.field === 'refs' ? 1 : 2)} refused`, async () => {
      const atLimit = await a.send(c.make(c.limit) as never);
      assert.ok(atLimit.message_id);
      // Two-byte characters step by 2; selectors, digests and counts by 1.
      const over = c.limit + (['subject', 'body', 'correlation', 'refs.0.locator'].includes(c.field) ? 2 : 1);
      const before = (await b.unread()).unread;
      await expectTooLarge(a.send(c.make(over) as never), c.field, c.limit, over);
      assert.equal((await b.unread()).unread, before, 'a refused send stores nothing');
    });
  }

  it('one byte over counts bytes exactly (ASCII)', async () => {
    await a.send({ ...base, subject: 'x'.repeat(LIMITS.subjectBytes) });
    await expectTooLarge(a.send({ ...base, subject: 'x'.repeat(LIMITS.subjectBytes + 1) }), 'subject', LIMITS.subjectBytes, LIMITS.subjectBytes + 1);
    await a.send({ ...base, body: 'x'.repeat(LIMITS.bodyBytes) });
    await expectTooLarge(a.send({ ...base, body: 'x'.repeat(LIMITS.bodyBytes + 1) }), 'body', LIMITS.bodyBytes, LIMITS.bodyBytes + 1);
  });

  it('inbox limit and ack ids', async () => {
    assert.ok(Array.isArray((await b.inbox({ limit: LIMITS.inboxLimitMax })).messages));
    await expectTooLarge(b.inbox({ limit: LIMITS.inboxLimitMax + 1 }), 'limit', LIMITS.inboxLimitMax, LIMITS.inboxLimitMax + 1);
    const ids = Array.from({ length: LIMITS.ackIdsMax + 1 }, (_, i) => `m-x${i}`);
    await expectTooLarge(b.ack(ids), 'message_ids', LIMITS.ackIdsMax, LIMITS.ackIdsMax + 1);
  });

  it('control characters: none in subjects, only \\n and \\t in bodies', async () => {
    await a.send({ ...base, body: 'line\n\tindented' });
    for (const bad of [{ subject: 'a\nb' }, { subject: 'a\u0007' }, { body: 'a\rb' }, { body: 'nul\u0000' }, { subject: '\u009b' }]) {
      const err = await a.send({ ...base, ...bad }).catch((e: unknown) => e);
      assert.ok(err instanceof MailError && err.code === 'malformed', `refused ${JSON.stringify(bad)}`);
    }
    const lone = await a.send({ ...base, body: '\ud800' }).catch((e: unknown) => e);
    assert.ok(lone instanceof MailError && lone.code === 'malformed', 'a lone surrogate is not text');
  });

  it('account ids and room names follow the selector rule', async () => {
    await d.operator.admin.accountAdd({ id: sel(LIMITS.selectorBytes) });
    await expectTooLarge(d.operator.admin.accountAdd({ id: sel(LIMITS.selectorBytes + 1) }), 'id', LIMITS.selectorBytes, LIMITS.selectorBytes + 1);
    for (const bad of ['-x', '.x', 'a..b', 'a b', 'a/b', '#a', '']) {
      const err = await d.operator.admin.accountAdd({ id: bad }).catch((e: unknown) => e);
      assert.ok(err instanceof MailError && err.code === 'malformed', `refused id ${JSON.stringify(bad)}`);
    }
    await d.operator.admin.accountAdd({ id: 'ok.name_1@host+tag-2' });
  });

  it('refuses request bodies over the cap before parsing', async () => {
    const big = 'x'.repeat(LIMITS.requestBodyBytes + 1);
    const r = await raw(d.url, '/mail/send', { token: bSecret, body: big });
    assert.equal(r.status, 413);
    assert.equal(r.json.error.code, 'too_large');
    assert.equal(r.json.error.field, '(body)');
    assert.equal(r.json.error.limit, LIMITS.requestBodyBytes);
  });
});
