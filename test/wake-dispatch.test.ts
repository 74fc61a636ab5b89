// Delivery chains end to end on the real daemon: `m4a wake set` stores a chain, mail commits, the
// dispatcher runs the chain (real command processes), records every attempt, and receipts show
// stored / signalled / surfaced / acknowledged. Plus the rules: local operator only, debounce,
// awake readers, the loop guard, room opt-in, first success ends the chain.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { request } from 'node:http';
import { join } from 'node:path';
import { MailClient } from '../src/client/http-client.js';
import { MailError } from '../src/wire/errors.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

/** A wake command: appends its argv and the M4A_WAKE_* environment to a JSON-lines file. */
const RECORDER = `
const fs = require('node:fs');
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('M4A_WAKE_')));
fs.appendFileSync(process.argv[2], JSON.stringify({ argv: process.argv.slice(3), env }) + '\\n');
`;

describe('wake chains', () => {
  let d: TestDaemon;
  let dir: string;
  let script: string;
  let alice: MailClient;
  let bob: MailClient;
  const runs = (file: string): { argv: string[]; env: Record<string, string> }[] =>
    existsSync(file)
      ? readFileSync(file, 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];

  before(async () => {
    d = await startTestDaemon({ loopGuard: { pairMax: 5, windowMs: 60_000, threadMax: 50 } });
    dir = mkdtempSync(join(tmpdir(), 'm4a-wake-'));
    script = join(dir, 'recorder.cjs');
    writeFileSync(script, RECORDER);
    alice = (await d.account('alice')).client;
    bob = (await d.account('bob')).client;
  });
  after(async () => {
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const commandChain = async (account: string, out: string, extra: { rooms?: boolean; debounce_ms?: number } = {}) =>
    d.operator.admin.wakeSet({
      account,
      steps: [{ kind: 'hooks' }, { kind: 'command', argv: [process.execPath, script, out, '{account}', '{wake_text}'], timeout_secs: 30 }],
      ...extra,
    });

  it('runs the chain for mail to an account with no running session: hooks fail, the command runs, with ids in the environment only', async () => {
    const out = join(dir, 'carol.jsonl');
    const carol = (await d.account('carol')).client;
    const set = await commandChain('carol', out);
    assert.equal(set.chain.account, 'carol');
    assert.equal(set.chain.steps.length, 2);
    const sent = await alice.send({ to: 'carol', subject: '$(touch pwned) "; rm -rf ~', body: 'BODY NEVER TRAVELS' });
    const [run] = await until('the command ran', () => runs(out).length > 0 && runs(out));
    assert.equal(run!.argv[0], 'carol');
    assert.ok(!run!.argv.join(' ').includes('touch'), 'no subject on the command line');
    assert.ok(!JSON.stringify(run).includes('BODY NEVER TRAVELS'), 'no body anywhere in a wake');
    assert.match(run!.argv[1]!, /new message/);
    assert.equal(run!.env.M4A_WAKE_MESSAGE_IDS, sent.message_id);
    assert.equal(run!.env.M4A_WAKE_ACCOUNT, 'carol');
    assert.ok(!existsSync(join(dir, 'pwned')));

    const before = await until('attempts recorded', async () => {
      const r = await alice.receipts(sent.message_id);
      return r.receipts[0]!.signalled.length === 2 && r;
    });
    const [rc] = before.receipts;
    assert.equal(rc!.recipient, 'carol');
    assert.deepEqual(
      rc!.signalled.map((s) => [s.adapter, s.ok]),
      [
        ['hooks', false],
        ['command', true],
      ],
      'the first success ends the chain; every attempt recorded',
    );
    assert.equal(rc!.surfaced_at, null);
    assert.equal(rc!.acked_at, null);

    const page = await carol.inbox();
    assert.equal(page.messages[0]?.message_id, sent.message_id);
    await d.engine.receiptsSettled();
    const mid = (await alice.receipts(sent.message_id)).receipts[0]!;
    assert.ok(mid.surfaced_at, 'surfaced by the first inbox read');
    assert.equal(mid.acked_at, null, 'reading changes no acknowledgement state');
    assert.equal((await carol.unread()).unread, 1, 'reading changes no read state');
    await carol.ack(sent.message_id);
    const last = (await carol.receipts(sent.message_id)).receipts[0]!;
    assert.ok(last.acked_at);
    assert.equal(last.surfaced_at, mid.surfaced_at, 'surfaced is the first read only');
  });

  it('debounces a burst into one wake', async () => {
    const out = join(dir, 'dave.jsonl');
    await d.account('dave');
    await commandChain('dave', out, { debounce_ms: 300 });
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await alice.send({ to: 'dave', subject: `burst ${i}`, body: 'x' })).message_id);
    await until('the command ran', () => runs(out).length > 0);
    await new Promise((r) => setTimeout(r, 800));
    const all = runs(out);
    assert.equal(all.length, 1, `one wake for the burst, got ${all.length}`);
    assert.deepEqual(all[0]!.env.M4A_WAKE_MESSAGE_IDS!.split(','), ids);
  });

  it('a recipient with a parked inbox read is awake: it gets its answer, no command runs', async () => {
    const out = join(dir, 'erin.jsonl');
    const erin = (await d.account('erin')).client;
    await commandChain('erin', out);
    const waiting = erin.inbox({ wait_secs: 10 });
    await until('the wait parked', () => d.engine.parkedWaits() > 0);
    const sent = await alice.send({ to: 'erin', subject: 'while you wait', body: 'x' });
    assert.equal((await waiting).messages[0]?.message_id, sent.message_id);
    const r = await until('the attempt recorded', async () => {
      const x = (await alice.receipts(sent.message_id)).receipts[0]!;
      return x.signalled.length > 0 && x;
    });
    assert.deepEqual(
      r.signalled.map((s) => [s.adapter, s.ok]),
      [['wait', true]],
    );
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(runs(out).length, 0);
  });

  it('the loop guard: quieted mail is stored but wakes nobody, and the receipt says so', async () => {
    const out = join(dir, 'bob.jsonl');
    await commandChain('bob', out, { debounce_ms: 0 });
    let quietId = '';
    for (let i = 0; i < 6; i++) {
      const r = await alice.send({ to: 'bob', subject: `ok ${i}`, body: 'ok' });
      if (r.quiet) quietId = r.message_id;
      await bob.send({ to: 'alice', subject: `thanks ${i}`, body: 'thanks' });
    }
    assert.ok(quietId, 'the pair went over its window');
    const r = await until('the guard recorded', async () => {
      const x = (await alice.receipts(quietId)).receipts[0]!;
      return x.signalled.length > 0 && x;
    });
    assert.deepEqual(
      r.signalled.map((s) => [s.adapter, s.ok]),
      [['loop-guard', false]],
    );
    const woken = runs(out).flatMap((x) => x.env.M4A_WAKE_MESSAGE_IDS!.split(','));
    assert.ok(!woken.includes(quietId), 'the quieted message named in no wake');
    assert.ok(woken.length >= 1, 'mail before the guard did wake');
  });

  it("an adapter's why (a command's stderr) is for the recipient and the operator, not the sender", async () => {
    const ivy = (await d.account('ivy')).client;
    await d.operator.admin.wakeSet({
      account: 'ivy',
      steps: [{ kind: 'command', argv: [process.execPath, '-e', 'console.error("IVY-PRIVATE-STDERR"); process.exit(3)'] }],
      debounce_ms: 0,
    });
    const sent = await alice.send({ to: 'ivy', subject: 'hello', body: 'x' });
    const mine = await until('the attempt recorded', async () => {
      const x = (await ivy.receipts(sent.message_id)).receipts[0]!;
      return x.signalled.length > 0 && x;
    });
    assert.match(mine.signalled[0]!.detail, /IVY-PRIVATE-STDERR/, 'the recipient sees why');
    assert.match((await d.operator.receipts(sent.message_id)).receipts[0]!.signalled[0]!.detail, /IVY-PRIVATE-STDERR/, 'the operator sees why');
    const theirs = (await alice.receipts(sent.message_id)).receipts[0]!;
    assert.deepEqual(
      theirs.signalled.map((s) => [s.adapter, s.ok]),
      [['command', false]],
      'the sender sees which adapter, when, ok or not',
    );
    assert.ok(!JSON.stringify(theirs).includes('IVY-PRIVATE-STDERR'), "but not the recipient's stderr");
  });

  it('room mail wakes only accounts that opted in', async () => {
    const inOut = join(dir, 'frank.jsonl');
    const outOut = join(dir, 'gina.jsonl');
    await d.account('frank');
    await d.account('gina');
    await commandChain('frank', inOut, { rooms: true, debounce_ms: 0 });
    await commandChain('gina', outOut, { debounce_ms: 0 });
    await d.operator.admin.roomAdd('ops');
    for (const a of ['alice', 'frank', 'gina']) await d.operator.admin.memberAdd('ops', a);
    const sent = await alice.send({ to: '#ops', subject: 'standup', body: 'x' });
    await until('frank woken', () => runs(inOut).length > 0);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(runs(outOut).length, 0, 'gina did not opt in to room wakes');
    const rec = (await alice.receipts(sent.message_id)).receipts;
    assert.deepEqual(rec.map((x) => x.recipient).sort(), ['alice', 'frank', 'gina'], 'one receipt per member');
  });

  it('refuses a bad step with a named error and stores nothing', async () => {
    await d.account('hank');
    await assert.rejects(
      d.operator.admin.wakeSet({ account: 'hank', steps: [{ kind: 'command', argv: ['node', '{subject}'] }] }),
      (e: unknown) => e instanceof MailError && e.code === 'malformed' && /placeholder/.test(e.message),
    );
    await assert.rejects(
      d.operator.admin.wakeSet({ account: 'hank', steps: [{ kind: 'webhook', url: 'http://192.0.2.7/hook' }] }),
      (e: unknown) => e instanceof MailError && e.code === 'malformed',
    );
    await assert.rejects(d.operator.admin.wakeSet({ account: 'nobody', steps: [{ kind: 'hooks' }] }), (e: unknown) => e instanceof MailError && e.code === 'unknown_participant');
    assert.ok(!(await d.operator.admin.wakeList()).chains.some((c) => c.account === 'hank'));
  });

  it('only the operator sets chains; a webhook chain shows its signing key once', async () => {
    await assert.rejects(alice.admin.wakeSet({ account: 'alice', steps: [{ kind: 'hooks' }] }), (e: unknown) => e instanceof MailError && e.code === 'permission_denied');
    const first = await d.operator.admin.wakeSet({ account: 'alice', steps: [{ kind: 'webhook', url: 'http://127.0.0.1:9/hook' }] });
    assert.match(first.webhook_signing_key ?? '', /^m4a_whsec_/);
    const second = await d.operator.admin.wakeSet({ account: 'alice', steps: [{ kind: 'webhook', url: 'http://127.0.0.1:9/other' }] });
    assert.equal(second.webhook_signing_key, undefined, 'never shown twice');
    await d.operator.admin.wakeClear('alice');
    assert.ok(!(await d.operator.admin.wakeList()).chains.some((c) => c.account === 'alice'));
  });
});

describe('wake chains: from another machine', () => {
  const lan = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal);
  it('refuses /admin/wake/* from a non-loopback peer, even with the operator credential', { skip: lan ? false : 'this machine has no non-loopback IPv4 address' }, async () => {
    const d = await startTestDaemon({ host: '0.0.0.0' });
    try {
      // The Host header names the daemon (as configured); the peer address is the LAN one.
      const res = await new Promise<{ status: number; text: string } | Error>((resolve) => {
        const req = request(
          {
            host: lan!.address,
            port: d.port,
            path: '/admin/wake/list',
            method: 'POST',
            headers: { authorization: `Bearer ${d.operatorToken}`, 'content-type': 'application/json', host: `0.0.0.0:${d.port}` },
          },
          (r) => {
            let text = '';
            r.on('data', (c: Buffer) => (text += c.toString()));
            r.on('end', () => resolve({ status: r.statusCode ?? 0, text }));
          },
        );
        req.on('error', resolve);
        req.end('{}');
      });
      assert.ok(!(res instanceof Error), `reached the daemon over ${lan!.address}`);
      const body = JSON.parse(res.text) as { error: { code: string; need?: string } };
      assert.equal(res.status, 403);
      assert.equal(body.error.code, 'permission_denied');
      assert.equal(body.error.need, 'local');
      // The same request over loopback is served.
      const ok = await new MailClient({ url: `http://0.0.0.0:${d.port}`, token: d.operatorToken }).admin.wakeList().catch((e: unknown) => e);
      assert.ok(!(ok instanceof Error), String(ok));
    } finally {
      await d.stop();
    }
  });
});
