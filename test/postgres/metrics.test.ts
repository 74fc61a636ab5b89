// GET /metrics of two daemons sharing one PostgreSQL database: a send through one moves the
// other's commit feed counters (its notifications, the keyed announce, the commit batch) and the
// sender's append counters by exactly that send; a catch-up after the listening connection was
// killed is counted, and the lag gauges hold the delay a lock on the messages table forced on it;
// `m4a doctor` prints that lag.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { MailClient } from '../../src/client/http-client.js';
import { parseExposition, type Sample } from '../../src/cli/metrics-summary.js';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { until } from '../support/until.js';
import { admin, freshSchema, kept, pgSkip, sleep, terminateBackends } from './support/pg.js';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
/** Daemon B's connections, so the test can end them alone. */
const APP_B = 'm4a-metrics-b';
/** How long the catch-up after B's re-LISTEN is held up by the lock. */
const HOLD_MS = 400;

async function scrape(d: TestDaemon): Promise<Sample[]> {
  const r = await fetch(`${d.url}/metrics`, { headers: { authorization: `Bearer ${d.operatorToken}` } });
  assert.equal(r.status, 200, await r.clone().text());
  return parseExposition(await r.text());
}

/** A scrape right after the daemon's connections were ended may find the operator credential's
 *  lookup refused (503 store_unavailable) until the pool has noticed: null then. */
async function scrapeSoon(d: TestDaemon): Promise<Sample[] | null> {
  const r = await fetch(`${d.url}/metrics`, { headers: { authorization: `Bearer ${d.operatorToken}` } });
  return r.status === 200 ? parseExposition(await r.text()) : null;
}

function value(s: Sample[], name: string, labels: Record<string, string> = {}): number {
  return s.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v)).reduce((a, x) => a + x.value, 0);
}

const since =
  (s0: Sample[], s1: Sample[]) =>
  (name: string, labels: Record<string, string> = {}) =>
    value(s1, name, labels) - value(s0, name, labels);

describe('postgres: /metrics of the commit feed, two daemons on one database', { skip: pgSkip }, () => {
  let schema: string;
  let dir: string;
  let a: TestDaemon;
  let b: TestDaemon;
  let aliceOnA: MailClient;
  let bobOnB: MailClient;

  before(async () => {
    assert.ok(existsSync(CLI), 'run `npm run build` first (npm test does)');
    let spec: string;
    ({ schema, spec } = await freshSchema('metrics'));
    dir = mkdtempSync(join(tmpdir(), 'm4a-pg-metrics-'));
    a = await startTestDaemon({ dataDir: join(dir, 'a'), store: spec });
    b = await startTestDaemon({ dataDir: join(dir, 'b'), store: `${spec}&application_name=${APP_B}` });
    aliceOnA = (await a.account('alice')).client;
    bobOnB = new MailClient({ url: b.url, token: (await a.account('bob')).secret, timeoutMs: 30_000 });
  });
  after(async () => {
    bobOnB?.close();
    await a?.stop();
    await b?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    "a send through A moves B's feed counters by its two notifications and one announce, and A's append counters by one",
    kept(async () => {
      await bobOnB.inbox({});
      const waiting = bobOnB.inbox({ wait_secs: 20 });
      await until('a wait parked on B', async () => value(await scrape(b), 'm4a_waits_parked') === 1);
      const [a0, b0] = [await scrape(a), await scrape(b)];
      await aliceOnA.send({ to: 'bob', subject: 'across', body: 'b' });
      assert.deepEqual(
        (await waiting).messages.map((m) => m.subject),
        ['across'],
        "B's parked wait was woken by the feed",
      );
      // One append batch sends a keyed notification and the plain head; every daemon hears both.
      const [a1, b1] = await until('both notifications on both daemons', async () => {
        const s = [await scrape(a), await scrape(b)] as const;
        return since(a0, s[0])('m4a_pg_feed_notifications_total') >= 2 && since(b0, s[1])('m4a_pg_feed_notifications_total') >= 2 && s;
      });
      const dA = since(a0, a1);
      const dB = since(b0, b1);
      assert.equal(dB('m4a_pg_feed_notifications_total'), 2);
      assert.equal(dA('m4a_pg_feed_notifications_total'), 2);
      // B announced the send from its keys, without a query; only when the safety poll read the
      // new head in the instant before the notification did a catch-up announce it instead.
      const announcedBy = { keyed: dB('m4a_pg_feed_keyed_announces_total'), catchUp: dB('m4a_pg_feed_catch_ups_total') };
      assert.ok((announcedBy.keyed === 1 && announcedBy.catchUp === 0) || (announcedBy.keyed === 0 && announcedBy.catchUp === 1), JSON.stringify(announcedBy));
      assert.equal(dB('m4a_pg_feed_listens_total'), 0);
      assert.equal(dB('m4a_commit_batch_messages_count'), 1, 'B announced one commit of one message');
      assert.equal(dB('m4a_commit_batch_messages_sum'), 1);
      assert.equal(dB('m4a_store_append_batches_total'), 0, 'B appended nothing');
      assert.equal(dB('m4a_store_appends_total'), 0);
      assert.equal(dB('m4a_sends_total'), 0);

      assert.equal(dA('m4a_sends_total', { door: 'http' }), 1);
      assert.equal(dA('m4a_store_append_batches_total'), 1);
      assert.equal(dA('m4a_store_appends_total'), 1);
      // A hears its own notifications too: whichever of them and the commit's answer comes first
      // announces the message, once.
      assert.equal(dA('m4a_commit_batch_messages_sum'), 1, 'A announced its own commit once');
      assert.ok(dA('m4a_pg_feed_keyed_announces_total') <= 1);
      assert.equal(dA('m4a_pg_feed_catch_ups_total'), 0, 'its own commit needed no catch-up query, whichever came first');
      assert.equal(dA('m4a_store_call_duration_seconds_count', { method: 'appendMessage' }), 1);
      assert.equal(value(a1, 'm4a_store_commits_total'), 0, 'a SQLite count: 0 on PostgreSQL');
      assert.equal(value(a1, 'm4a_pg_feed_listens_total'), 1, 'A listened once');
    }),
  );

  it(
    "a catch-up after B's listening connection was killed is counted, its lag held by a lock is the gauge's, and doctor prints it",
    kept(async () => {
      const b0 = await scrape(b);
      const sql = admin();
      let killed = 0;
      // The catch-up that follows B's re-LISTEN reads the messages table: held up while it is locked.
      await sql.begin(async (tx) => {
        await tx.unsafe(`LOCK TABLE "${schema}".messages IN ACCESS EXCLUSIVE MODE`);
        killed = await terminateBackends(sql, APP_B);
        await until('B listening again', async () => {
          const s = await scrapeSoon(b);
          return s && since(b0, s)('m4a_pg_feed_listens_total') === 1;
        });
        await sleep(HOLD_MS);
        const held = await until('a scrape of B', () => scrapeSoon(b));
        assert.equal(since(b0, held)('m4a_pg_feed_catch_ups_total'), 0, 'the catch-up is still waiting for the lock');
      });
      assert.ok(killed >= 1, 'B had connections to end');
      const b1 = await until('the catch-up done', async () => {
        const s = await scrapeSoon(b);
        return s && since(b0, s)('m4a_pg_feed_catch_ups_total') >= 1 && s;
      });
      const d = since(b0, b1);
      assert.equal(d('m4a_pg_feed_listens_total'), 1);
      const lag = value(b1, 'm4a_pg_feed_lag_seconds');
      assert.ok(lag >= HOLD_MS / 1000, `lag ${lag} s covers the ${HOLD_MS} ms the lock held the catch-up`);
      assert.ok(value(b1, 'm4a_pg_feed_lag_max_seconds') >= lag);

      const home = mkdtempSync(join(tmpdir(), 'm4a-home-'));
      try {
        // Not spawnSync: the daemons run in this process and must answer doctor meanwhile.
        const r = await run(process.execPath, [CLI, 'doctor', '--data-dir', b.dataDir, '--project', home], {
          encoding: 'utf8',
          timeout: 60_000,
          cwd: home,
          env: { HOME: home, PATH: process.env.PATH ?? '' },
        }).catch((e: { stdout?: string; stderr?: string }) => ({ stdout: e.stdout ?? '', stderr: e.stderr ?? '' }));
        const line = /feed lag (\d+) ms/.exec(r.stdout);
        assert.ok(line, `doctor's output has the feed lag:\n${r.stdout}\n${r.stderr}`);
        assert.ok(Number(line[1]) >= HOLD_MS, r.stdout);
      } finally {
        rmSync(home, { recursive: true, force: true });
      }
    }),
  );
});
