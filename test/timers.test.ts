// Durable reminders with an injected clock: set, list, snooze, clear; a timer survives a daemon
// restart and arrives once, as mail from the reserved account `mailbox`.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MailClient } from '../src/client/http-client.js';
import { ManualClock } from '../src/engine/clock.js';
import { MailError } from '../src/wire/errors.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';
import { createMemoryStore } from '../src/store/memory/memory-store.js';
import { MailEngine, type Caller } from '../src/engine/mail-engine.js';
import { AdminOps } from '../src/engine/admin-ops.js';

const MIN = 60_000;

const reminders = async (c: MailClient) => (await c.inbox({ include_acked: true })).messages.filter((m) => m.from === 'mailbox');

describe('timers', () => {
  it('survive a restart, fire once when due, from mailbox, and are gone afterwards', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'm4a-timers-'));
    const clock = new ManualClock();
    let d: TestDaemon | null = await startTestDaemon({ dataDir, clock });
    try {
      const { secret } = await d.account('bob');
      let bob = new MailClient({ url: d.url, token: secret });
      const t = await bob.remind(45 * 60, 're-check the audit', true);
      assert.match(t.id, /^t-[0-9a-f]{12}$/);
      assert.equal(t.to, 'bob');
      assert.equal(t.due_at, new Date(clock.now() + 45 * MIN).toISOString());
      clock.advance(44 * MIN);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal((await reminders(bob)).length, 0, 'not yet due');
      bob.close();
      await d.stop();
      d = null;

      // Down past the due time; the next daemon on the same data directory delivers it.
      clock.advance(2 * MIN);
      d = await startTestDaemon({ dataDir, clock });
      bob = new MailClient({ url: d.url, token: secret });
      clock.advance(0);
      const [m] = await until(
        'the reminder',
        async () => {
          const r = await reminders(bob);
          return r.length > 0 && r;
        },
        5_000,
      );
      assert.equal(m!.subject, 'Reminder: re-check the audit');
      assert.equal(m!.from_kind, 'service');
      assert.equal(m!.to, undefined, "to the reader's own account: left out");
      assert.deepEqual((await bob.timers()).timers, [], 'a fired timer is gone');
      clock.advance(60 * MIN);
      await new Promise((r) => setTimeout(r, 150));
      assert.equal((await reminders(bob)).length, 1, 'delivered once');
      bob.close();
    } finally {
      await d?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a session timer goes to the session; snooze moves it; clear removes it; other accounts see none', async () => {
    const clock = new ManualClock();
    const d = await startTestDaemon({ clock });
    try {
      const carol = (await d.account('carol')).client;
      const dan = (await d.account('dan')).client;
      const me = await carol.whoami();
      const a = await carol.remind(60, 'stand up');
      assert.equal(a.to, me.address, 'this test process is an attested session of carol');
      const b = await carol.remind(120, 'never');
      assert.deepEqual(
        (await carol.timers()).timers.map((x) => x.id),
        [a.id, b.id],
      );
      assert.deepEqual((await dan.timers()).timers, []);
      await assert.rejects(dan.timerClear(a.id), (e: unknown) => e instanceof MailError && e.code === 'unknown_timer');
      const snoozed = await carol.timerSnooze(a.id, 600);
      assert.equal(snoozed.due_at, new Date(clock.now() + 600_000).toISOString());
      await carol.timerClear(b.id);
      await assert.rejects(carol.timerClear(b.id), (e: unknown) => e instanceof MailError && e.code === 'unknown_timer');

      clock.advance(5 * MIN);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal((await reminders(carol)).length, 0, 'snoozed past 5 minutes; the cleared one never fires');
      clock.advance(6 * MIN);
      const [m] = await until(
        'the snoozed reminder',
        async () => {
          const r = await reminders(carol);
          return r.length > 0 && r;
        },
        5_000,
      );
      assert.equal(m!.to, `carol/${me.slug}`, 'session mail, printed short');
      assert.equal(m!.subject, 'Reminder: stand up');
      clock.advance(60 * MIN);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal((await reminders(carol)).length, 1);
    } finally {
      await d.stop();
    }
  });

  it('bad input is named and changes nothing; the mailbox account cannot be used to log in', async () => {
    const d = await startTestDaemon();
    try {
      const erin = (await d.account('erin')).client;
      await assert.rejects(erin.remind(0, 'x'), (e: unknown) => e instanceof MailError && e.code === 'malformed');
      await assert.rejects(erin.remind(60, 'x'.repeat(513)), (e: unknown) => e instanceof MailError && e.code === 'too_large');
      assert.deepEqual((await erin.timers()).timers, []);
      const accounts = (await d.operator.admin.accountList()).accounts;
      const mailbox = accounts.find((a) => a.id === 'mailbox');
      assert.equal(mailbox?.kind, 'service');
      assert.deepEqual(mailbox?.permissions, { send: true, read: false, urgent: false, operator: false });
    } finally {
      await d.stop();
    }
  });

  it('m4a_mail_remind is an MCP tool', async () => {
    const d = await startTestDaemon();
    try {
      const { secret } = await d.account('fay');
      const rpc = async (body: unknown) => {
        const res = await fetch(`${d.url}/mcp`, {
          method: 'POST',
          headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify(body),
        });
        return (await res.json()) as any;
      };
      await rpc({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
      const list = await rpc({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      const tool = list.result.tools.find((t: { name: string }) => t.name === 'm4a_mail_remind');
      assert.ok(tool, 'listed');
      assert.deepEqual(tool.inputSchema.required.sort(), ['in_secs', 'note']);
      const call = await rpc({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'm4a_mail_remind', arguments: { in_secs: 90, note: 'look again' } } });
      assert.equal(call.result.isError ?? false, false, JSON.stringify(call));
      const fay = new MailClient({ url: d.url, token: secret });
      assert.equal((await fay.timers()).timers[0]?.note, 'look again');
      fay.close();
    } finally {
      await d.stop();
    }
  });
});

// The TimerBook's interleavings on an in-process engine (memory store, ManualClock).
describe('timers: races and dead ends', () => {
  let n = 0;
  const ids = { messageId: () => `m-${String(++n).padStart(12, '0')}`, secret: () => `m4a_test_${++n}` };
  const turns = async (k = 30) => {
    for (let i = 0; i < k; i++) await new Promise((r) => setImmediate(r));
  };
  async function world() {
    const store = createMemoryStore();
    const clock = new ManualClock();
    const engine = new MailEngine({ store, clock, ids, hostId: 'h', isAlive: () => true });
    await engine.start();
    const admin = new AdminOps(engine);
    await admin.createAccount({ id: 'bob' });
    const bob: Caller = { account: (await store.getAccount('bob'))!, session: null };
    const inbox = async () => (await engine.inbox(bob, { include_acked: true })).messages.filter((m) => m.from === 'mailbox');
    // Hold every full timer scan after it has read, until released: a tick in flight.
    let gate: Promise<void> | null = null;
    const listRecords = store.listRecords.bind(store);
    store.listRecords = async (kind, prefix, limit) => {
      const rows = await listRecords(kind, prefix, limit);
      if (kind === 'timer' && prefix === '' && gate) await gate;
      return rows;
    };
    const hold = () => {
      let release!: () => void;
      gate = new Promise<void>((r) => (release = r));
      return () => {
        gate = null;
        release();
      };
    };
    return { store, clock, engine, bob, inbox, hold };
  }

  it('a timer set while a scan is in flight fires when due, not a poll later', async () => {
    const w = await world();
    try {
      await turns();
      const release = w.hold();
      w.clock.advance(MIN); // a scan starts and reads an empty list
      await turns();
      await w.engine.remind(w.bob, { in_secs: 1, note: 'soon', account: true });
      w.clock.advance(0);
      await turns();
      release();
      await turns();
      w.clock.advance(1_000);
      await turns();
      assert.equal((await w.inbox()).length, 1, 'due after 1 s, delivered at 1 s');
    } finally {
      await w.engine.close();
    }
  });

  it('a timer cleared while a scan is in flight does not fire', async () => {
    const w = await world();
    try {
      const t = await w.engine.remind(w.bob, { in_secs: 60, note: 'cleared', account: true });
      await turns();
      const release = w.hold();
      w.clock.advance(MIN); // the scan reads the timer as due
      await turns();
      await w.engine.timerClear(w.bob, { id: t.id });
      release();
      await turns();
      assert.equal((await w.inbox()).length, 0, 'cleared before delivery: never arrives');
    } finally {
      await w.engine.close();
    }
  });

  it('a session timer whose session is gone from the store reaches the account', async () => {
    const w = await world();
    try {
      const due = w.clock.now() + 2 * 24 * 60 * MIN;
      const t = { id: 't-0123456789ab', account: 'bob', lineage: 'l-gone', session: `s-${'a'.repeat(64)}`, due, note: 'after the session was pruned', createdAt: w.clock.now() };
      await w.store.putRecord({ kind: 'timer', id: `bob|${t.id}`, value: JSON.stringify(t), updatedAt: w.clock.now() });
      w.clock.advance(2 * 24 * 60 * MIN);
      await w.engine.tickTimers();
      const got = await w.inbox();
      assert.equal(got.length, 1, 'delivered to the account');
      assert.equal(got[0]!.to, undefined, 'to the account (left out for its reader)');
      assert.deepEqual((await w.engine.timerList(w.bob)).timers, [], 'and gone');
    } finally {
      await w.engine.close();
    }
  });
  it('a timer of a removed account is dropped, not retried every poll forever', async () => {
    const w = await world();
    try {
      await w.engine.remind(w.bob, { in_secs: 60, note: 'orphan', account: true });
      await w.store.removeAccount('bob');
      w.clock.advance(MIN);
      await w.engine.tickTimers();
      assert.deepEqual(await w.store.listRecords('timer', '', 10), [], 'dropped');
    } finally {
      await w.engine.close();
    }
  });
});
