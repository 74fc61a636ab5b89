// Leases over HTTP and MCP against a real daemon (each store kind) on a clock the test moves:
// file reservations (path: leases) that conflict by glob overlap unless both are shared, the
// holders a conflict names, renew and release by epoch (the fencing token), expiry and the end of
// a session's process freeing the resource, the per-holder cap, every limit at and over its edge,
// the commit guard's check, and m4a_reserve through the official MCP SDK client. And what one
// account cannot do to the others: fill a root or hide a reservation past the caps, or make a
// check or a claim hold the daemon (other requests are answered while the costliest run).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { getEncoding } from 'js-tiktoken';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { MailClient } from '../src/client/http-client.js';
import { ManualClock } from '../src/engine/clock.js';
import type { Caller } from '../src/engine/mail-engine.js';
import type { LeaseRecord } from '../src/store/types.js';
import { LEASE_LIMITS } from '../src/wire/leases.js';
import { startAgent, type AgentProc } from './support/agent.js';
import { recordingLogger, type LogLine } from './support/recording-logger.js';
import { STORE_KINDS, startTestDaemon, type TestDaemon } from './support/test-daemon.js';

const ROOT = '/work/repo';

/** Runs `work` and, until it settles, one request after another on `other`: how many of those
 *  were answered while it ran. A request that holds the event loop lets none through. */
async function answeredDuring<T>(work: () => Promise<T>, other: () => Promise<unknown>): Promise<{ result: PromiseSettledResult<T>; answered: number }> {
  let done = false;
  let answered = 0;
  const loop = (async () => {
    while (!done) {
      await other();
      if (!done) answered++;
    }
  })();
  const result = await work().then(
    (value): PromiseSettledResult<T> => ({ status: 'fulfilled', value }),
    (reason: unknown): PromiseSettledResult<T> => ({ status: 'rejected', reason }),
  );
  done = true;
  await loop;
  return { result, answered };
}

const rejected = (r: PromiseSettledResult<unknown>): any => {
  if (r.status !== 'rejected') assert.fail('answered, not refused');
  return r.reason;
};

const refused = async (p: Promise<unknown>, code: string, detail: Record<string, unknown> = {}): Promise<any> => {
  let got: any;
  await assert.rejects(p, (e: any) => {
    assert.equal(e.code, code, e.message);
    for (const [k, v] of Object.entries(detail)) assert.deepEqual(e.details?.[k], v, k);
    got = e;
    return true;
  });
  return got;
};

/** An agent process's call that must succeed. */
async function ok(a: AgentProc, path: string, body: unknown): Promise<any> {
  const r = await a.call(path, body);
  assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** An agent process's call that must be refused with `code`; returns the error envelope. */
async function no(a: AgentProc, path: string, body: unknown, code: string): Promise<any> {
  const r = await a.call(path, body);
  assert.equal(r.body?.error?.code, code, `${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.error;
}

// M4A_TEST_STORE=memory (or sqlite) runs one store kind only.
for (const kind of STORE_KINDS.filter((k) => !process.env.M4A_TEST_STORE || k === process.env.M4A_TEST_STORE)) {
  describe(`leases (${kind})`, () => {
    const clock = new ManualClock();
    let d: TestDaemon;
    let alice: MailClient;
    let bobSecret: string;
    let bob: AgentProc;
    let bob2: AgentProc;
    const procs: AgentProc[] = [];
    const ended: LeaseRecord[] = [];
    const logged: LogLine[] = [];
    const claim = (c: MailClient, glob: string, o: Record<string, unknown> = {}) => c.lease.claim({ resource: `path:${glob}`, root: ROOT, ...o });
    const live = async (glob: string) => (await alice.lease.list({ root: ROOT })).leases.filter((l) => l.resource === `path:${glob}`);
    /** A new account acting without a session (engine calls: no process needed). */
    const bareCaller = async (id: string): Promise<Caller> => {
      await d.account(id);
      return { account: (await d.engine.store.getAccount(id))!, session: null };
    };
    /** Moves the clock and runs the expiry sweep it triggers to its end. */
    const advance = async (ms: number) => {
      clock.advance(ms);
      await d.engine.leases.tick();
    };

    before(async () => {
      d = await startTestDaemon({ storeKind: kind, clock, log: recordingLogger(logged) });
      alice = (await d.account('alice')).client;
      bobSecret = (await d.account('bob')).secret;
      bob = await startAgent(d.url, bobSecret);
      bob2 = await startAgent(d.url, bobSecret);
      procs.push(bob, bob2);
      d.engine.leases.onEnded((l) => void ended.push(l));
    });
    after(async () => {
      for (const p of procs) await p.exit();
      await d.stop();
    });

    it('claims a glob; an overlapping claim is refused naming the holder, its mode, resource, expiry and reason', async () => {
      const address = (await alice.whoami()).address;
      const me = (await d.engine.printAddresses([address])).get(address);
      const l = await claim(alice, 'src/parser/**', { reason: 'refactor', ttl_secs: 1800 });
      assert.match(l.lease_id, /^l-[0-9a-z]+$/);
      assert.equal(l.resource, 'path:src/parser/**');
      assert.equal(l.root, ROOT);
      assert.equal(l.holder, me, 'the printed address');
      assert.notEqual(me, address);
      assert.equal(l.mode, 'exclusive');
      assert.equal(l.epoch, 1);
      assert.equal(l.attempt, 1);
      assert.equal(l.expires_at, new Date(clock.now() + 1800_000).toISOString());
      const e = await no(bob, '/lease/claim', { resource: 'path:src/**/*.ts', root: ROOT }, 'lease_conflict');
      assert.deepEqual(e.holders, [{ holder: l.holder, mode: 'exclusive', resource: 'path:src/parser/**', expires_at: l.expires_at, reason: 'refactor' }]);
      assert.match(e.message, /refactor/);
      // Globs that cannot match one path do not conflict, nor do other roots (another space).
      await ok(bob, '/lease/claim', { resource: 'path:src/*.ts', root: ROOT });
      await ok(bob, '/lease/claim', { resource: 'path:src/parser/**', root: `${ROOT}-fork` });
      // The root is normalised: the same space however it is written.
      await no(bob, '/lease/claim', { resource: 'path:src/parser/a.ts', root: `${ROOT}/./x/../` }, 'lease_conflict');
    });

    it('shared coexists with shared, never with exclusive (either way round)', async () => {
      const s1 = await claim(alice, 'docs/**', { mode: 'shared' });
      const s2 = await ok(bob, '/lease/claim', { resource: 'path:docs/*.md', root: ROOT, mode: 'shared' });
      assert.equal(s2.mode, 'shared');
      const e = await no(bob2, '/lease/claim', { resource: 'path:docs/a.md', root: ROOT }, 'lease_conflict');
      assert.deepEqual(
        e.holders.map((h: any) => h.resource),
        ['path:docs/**', 'path:docs/*.md'],
        'every holder, oldest first',
      );
      await ok(bob2, '/lease/claim', { resource: 'path:assets/**', root: ROOT });
      await refused(claim(alice, 'assets/logo.svg', { mode: 'shared' }), 'lease_conflict');
      await alice.lease.release({ lease_id: s1.lease_id, epoch: s1.epoch });
    });

    it('renew extends from now; a stale epoch, an unknown lease or another holder is lease_lost and changes nothing', async () => {
      const l = await claim(alice, 'renew/**', { ttl_secs: 60 });
      await advance(30_000);
      const r = await alice.lease.renew({ lease_id: l.lease_id, epoch: l.epoch, ttl_secs: 600 });
      assert.equal(r.expires_at, new Date(clock.now() + 600_000).toISOString());
      assert.equal(r.epoch, l.epoch, 'a renew is not a new claim');
      const d2 = await alice.lease.renew({ lease_id: l.lease_id, epoch: l.epoch });
      assert.equal(d2.expires_at, new Date(clock.now() + LEASE_LIMITS.ttlDefaultSecs * 1000).toISOString(), 'without ttl_secs: the default');
      await refused(alice.lease.renew({ lease_id: l.lease_id, epoch: l.epoch + 1 }), 'lease_lost', { lease_id: l.lease_id });
      await refused(alice.lease.release({ lease_id: l.lease_id, epoch: 7 }), 'lease_lost', { lease_id: l.lease_id });
      await refused(alice.lease.release({ lease_id: 'l-nosuchlease', epoch: 1 }), 'lease_lost', { lease_id: 'l-nosuchlease' });
      // Another account, and another session of the same account, may neither renew nor release.
      const mine = await ok(bob, '/lease/claim', { resource: 'path:bob-only/**', root: ROOT });
      await no(bob2, '/lease/release', { lease_id: mine.lease_id, epoch: mine.epoch }, 'lease_lost');
      await no(bob2, '/lease/renew', { lease_id: mine.lease_id, epoch: mine.epoch }, 'lease_lost');
      await refused(alice.lease.release({ lease_id: mine.lease_id, epoch: mine.epoch }), 'lease_lost');
      assert.equal((await live('bob-only/**')).length, 1, 'still held');
      const released = await ok(bob, '/lease/release', { lease_id: mine.lease_id, epoch: mine.epoch });
      assert.equal(released.lease_id, mine.lease_id);
      assert.equal((await live('bob-only/**')).length, 0, 'free at once');
      assert.equal(ended.find((x) => x.id === mine.lease_id)?.endReason, 'released');
      await ok(bob2, '/lease/claim', { resource: 'path:bob-only/**', root: ROOT });
    });

    it('expiry on the moved clock frees the resource; the next claim gets epoch + 1 and the old holder has lost it', async () => {
      const l = await claim(alice, 'expiring/**', { ttl_secs: 10 });
      await advance(9_999);
      await no(bob, '/lease/claim', { resource: 'path:expiring/x', root: ROOT }, 'lease_conflict');
      await advance(1);
      assert.equal(ended.find((x) => x.id === l.lease_id)?.endReason, 'expired', 'ended by the sweep, and handed to the listeners');
      assert.ok(!(await d.engine.store.unsettledLeases(1000)).some((x) => x.id === l.lease_id), 'settled after the listeners ran');
      const again = await ok(bob, '/lease/claim', { resource: 'path:expiring/**', root: ROOT });
      assert.equal(again.epoch, l.epoch + 1, 'the fencing token moved on');
      await refused(alice.lease.renew({ lease_id: l.lease_id, epoch: l.epoch }), 'lease_lost');
    });

    it('a failing end listener is logged, leaves the lease unsettled, and is retried at the next tick', async () => {
      let calls = 0;
      const l = await claim(alice, 'flaky/**', { ttl_secs: 10 });
      const off = d.engine.leases.onEnded((x) => {
        if (x.id !== l.lease_id) return;
        calls++;
        if (calls === 1) throw new Error('the pool is down');
      });
      try {
        await advance(10_000);
        assert.equal(calls, 1);
        assert.ok(
          (await d.engine.store.unsettledLeases(1000)).some((x) => x.id === l.lease_id),
          'unsettled after the failure',
        );
        assert.ok(
          logged.some((x) => x.level === 'warn' && (x.obj as { lease?: string }).lease === l.lease_id && /the pool is down/.test(String((x.obj as { err?: string }).err))),
          'the failure is logged',
        );
        await advance(1000);
        assert.equal(calls, 2);
        assert.ok(!(await d.engine.store.unsettledLeases(1000)).some((x) => x.id === l.lease_id), 'settled at the retry');
      } finally {
        off();
      }
    });

    it('a session whose process ended frees its leases at the next sweep, not at the TTL', async () => {
      const carol = await startAgent(d.url, bobSecret);
      procs.push(carol);
      const l = await ok(carol, '/lease/claim', { resource: 'path:gone/**', root: ROOT, ttl_secs: 8 * 3600 });
      await no(bob, '/lease/claim', { resource: 'path:gone/a', root: ROOT }, 'lease_conflict');
      await carol.exit();
      assert.equal((await live('gone/**')).length, 1, 'until the sweep the lease stands');
      await d.engine.sweepSessions();
      assert.equal((await live('gone/**')).length, 0);
      assert.equal(ended.find((x) => x.id === l.lease_id)?.endReason, 'session_ended');
      assert.equal((await ok(bob, '/lease/claim', { resource: 'path:gone/**', root: ROOT })).epoch, 2);
    });

    it(`one session holds at most ${LEASE_LIMITS.perHolder} live leases (too_many_leases); a release makes room`, async () => {
      const p = await startAgent(d.url, bobSecret);
      procs.push(p);
      const held = [];
      for (let i = 0; i < LEASE_LIMITS.perHolder; i++) held.push(await ok(p, '/lease/claim', { resource: `path:many/f${i}.ts`, root: ROOT }));
      const e = await no(p, '/lease/claim', { resource: 'path:many/one-more.ts', root: ROOT }, 'too_many_leases');
      assert.equal(e.limit, LEASE_LIMITS.perHolder);
      await ok(bob, '/lease/claim', { resource: 'path:many/other.ts', root: ROOT }); // another session's count is its own
      await ok(p, '/lease/release', { lease_id: held[0].lease_id, epoch: held[0].epoch });
      await ok(p, '/lease/claim', { resource: 'path:many/one-more.ts', root: ROOT });
      await p.exit();
      await d.engine.sweepSessions();
    });

    it('every limit at and over its edge, and bad resources, are refused by name, claiming nothing', async () => {
      const n = (await alice.lease.list({ limit: 500 })).leases.length;
      const base = { resource: 'path:edges/**', root: ROOT };
      await refused(alice.lease.claim({ ...base, ttl_secs: 9 }), 'malformed', { field: 'ttl_secs' });
      await refused(alice.lease.claim({ ...base, ttl_secs: 28_801 }), 'too_large', { field: 'ttl_secs', limit: 28_800 });
      await refused(alice.lease.claim({ ...base, reason: 'r'.repeat(513) }), 'too_large', { field: 'reason', limit: 512 });
      // 1,025 bytes in 2-byte characters: the engine counts the glob's bytes.
      await refused(alice.lease.claim({ ...base, resource: `path:a${'é'.repeat(512)}` }), 'too_large', { field: 'resource', limit: 1024 });
      // The schema counts bytes too (not UTF-16 units): one limit, whichever refuses first.
      await refused(alice.lease.claim({ ...base, resource: `path:${'a'.repeat(1025)}` }), 'too_large', { field: 'resource', limit: 1024, actual: 1025 });
      await refused(alice.lease.claim({ ...base, resource: `path:${'é'.repeat(600)}` }), 'too_large', { field: 'resource', limit: 1024, actual: 1200 });
      await refused(alice.lease.claim({ ...base, resource: `t-${'a'.repeat(1023)}` }), 'too_large', { field: 'resource', limit: 1024 });
      // Segments and wildcards: what a match costs grows with them.
      const segs = (n: number) => Array.from({ length: n }, (_, i) => `d${i}`).join('/');
      await refused(alice.lease.claim({ ...base, resource: `path:${segs(33)}` }), 'too_large', { field: 'resource', limit: LEASE_LIMITS.globSegments, actual: 33 });
      const wild = (n: number) => `edges/${Array(n).fill('?').join('/')}`;
      await refused(alice.lease.claim({ ...base, resource: `path:${wild(17)}` }), 'too_large', { field: 'resource', limit: LEASE_LIMITS.globWildcards, actual: 17 });
      assert.equal((await no(bob, '/lease/reserve', { action: 'claim', root: ROOT, paths: ['ok/**', `${'*?'.repeat(8)}*`] }, 'too_large')).field, 'paths.1');
      // The text rule of every single line: no bidi controls, invisible or line-breaking characters.
      const spoof = await refused(alice.lease.claim({ ...base, resource: 'path:docs/\u202egnp.exe\u200b' }), 'malformed', { field: 'resource', code_point: 'U+202E' });
      assert.match(spoof.message, /bidirectional control/);
      await refused(alice.lease.claim({ ...base, resource: 'path:docs/a\u200b.md' }), 'malformed', { field: 'resource', code_point: 'U+200B' });
      await refused(alice.lease.claim({ ...base, resource: 'path:docs/a\u2028b' }), 'malformed', { field: 'resource', code_point: 'U+2028' });
      await refused(alice.lease.claim({ ...base, resource: 'path:docs/a\u2029b' }), 'malformed', { field: 'resource', code_point: 'U+2029' });
      assert.equal((await no(bob, '/lease/reserve', { action: 'claim', root: ROOT, paths: ['docs/\u202egnp.exe'] }, 'malformed')).field, 'paths.0');
      await refused(alice.lease.claim({ ...base, resource: 'path:src/[abc' }), 'malformed', { field: 'resource' });
      await refused(alice.lease.claim({ ...base, resource: 'src/**' }), 'malformed', { field: 'resource' });
      await refused(alice.lease.claim({ resource: 'path:x/**' }), 'malformed', { field: 'root' });
      await refused(alice.lease.claim({ ...base, root: 'work/repo' }), 'malformed', { field: 'root' });
      await refused(alice.lease.claim({ ...base, resource: 't-0123456789' }), 'unknown_task');
      await refused(alice.lease.check({ root: ROOT, paths: Array.from({ length: 10_001 }, (_, i) => `f${i}`) }), 'malformed', { field: 'paths' });
      await refused(alice.lease.check({ root: ROOT, paths: ['ok.ts', '../up.ts'] }), 'malformed', { field: 'paths.1' });
      assert.equal((await alice.lease.list({ limit: 500 })).leases.length, n, 'nothing was claimed');
      const at = [
        await alice.lease.claim({ resource: 'path:edges/ttl-min', root: ROOT, ttl_secs: 10 }),
        await alice.lease.claim({ resource: 'path:edges/ttl-max', root: ROOT, ttl_secs: 28_800 }),
        await alice.lease.claim({ resource: 'path:edges/reason', root: ROOT, reason: 'r'.repeat(512) }),
        await alice.lease.claim({ resource: `path:${'é'.repeat(512)}`, root: ROOT }),
        await alice.lease.claim({ resource: `path:${'g'.repeat(1024)}`, root: ROOT }),
        await alice.lease.claim({ resource: `path:edges/${segs(31)}`, root: ROOT }),
        await alice.lease.claim({ resource: `path:${wild(16)}`, root: ROOT }),
      ];
      assert.equal(at[0]!.expires_at, new Date(clock.now() + 10_000).toISOString());
      assert.equal(at[1]!.expires_at, new Date(clock.now() + 28_800_000).toISOString());
      for (const l of at) await alice.lease.release({ lease_id: l.lease_id, epoch: l.epoch });
      const paths = Array.from({ length: 500 }, (_, i) => `edges/p${i}.ts`);
      assert.deepEqual((await alice.lease.check({ root: ROOT, paths })).conflicts, []);
    });

    it("check names other sessions' exclusive reservations matching each path: not the caller's own, not shared ones", async () => {
      const root = '/work/guarded';
      const mine = await alice.lease.claim({ resource: 'path:mine/**', root });
      const theirs = await ok(bob, '/lease/claim', { resource: 'path:src/**/*.ts', root, reason: 'parser work' });
      await ok(bob, '/lease/claim', { resource: 'path:docs/**', root, mode: 'shared' });
      const dir = await ok(bob, '/lease/claim', { resource: 'path:lib/core/', root });
      const paths = ['src/a.ts', 'src/x/y.ts', 'src/a.md', 'docs/guide.md', 'mine/file.ts', 'other.ts', 'lib/core', 'lib/core/deep/x.c', 'lib/corex'];
      const r = await alice.lease.check({ root, paths });
      assert.deepEqual(
        r.conflicts.map((c) => [c.path, c.lease.lease_id]),
        [
          ['src/a.ts', theirs.lease_id],
          ['src/x/y.ts', theirs.lease_id],
          ['lib/core', dir.lease_id],
          ['lib/core/deep/x.c', dir.lease_id],
        ],
      );
      assert.equal(r.conflicts[0]!.lease.reason, 'parser work');
      // `**` matches no segment too: the path named exactly as the glob's directory is its.
      const tools = await ok(bob, '/lease/claim', { resource: 'path:tools/**', root });
      assert.deepEqual(
        (await alice.lease.check({ root, paths: ['tools', 'toolsx'] })).conflicts.map((c) => [c.path, c.lease.lease_id]),
        [['tools', tools.lease_id]],
      );
      await ok(bob, '/lease/release', { lease_id: tools.lease_id, epoch: tools.epoch });
      assert.equal(r.conflicts[0]!.lease.holder, theirs.holder);
      const asBob = await ok(bob, '/lease/check', { root, paths });
      assert.deepEqual(
        asBob.conflicts.map((c: any) => [c.path, c.lease.lease_id]),
        [['mine/file.ts', mine.lease_id]],
        "bob's own reservations are his to commit",
      );
      // A caller without a session: its account's session-less leases are its own; sessions' are not.
      const account = (await d.engine.store.getAccount('alice'))!;
      const bare: Caller = { account, session: null };
      const acct = await d.engine.leases.claim(bare, { resource: 'path:acct/**', root });
      assert.equal(acct.holder, 'alice');
      const seen = await d.engine.leases.check(bare, { root, paths: ['acct/x', 'mine/x'] });
      assert.deepEqual(
        seen.conflicts.map((c) => c.path),
        ['mine/x'],
      );
      assert.deepEqual((await alice.lease.check({ root, paths: ['acct/x'] })).conflicts.length, 1, "the account's lease is not the session's");
      await d.engine.leases.release(bare, { lease_id: acct.lease_id, epoch: acct.epoch });
      // 10,000 paths against the space's leases in one read.
      const many = Array.from({ length: 10_000 }, (_, i) => (i % 2 ? `src/m${i}.ts` : `lib/m${i}.ts`));
      const t0 = performance.now();
      const big = await alice.lease.check({ root, paths: many });
      const ms = performance.now() - t0;
      assert.equal(big.conflicts.length, 5000);
      assert.ok(ms < 3000, `10,000 paths took ${ms.toFixed(0)} ms`);
    });

    it('list: every holder sees every live lease, filtered by prefix, root and holder', async () => {
      const root = '/work/listed';
      const a = await alice.lease.claim({ resource: 'path:lib/**', root });
      const b = await ok(bob, '/lease/claim', { resource: 'path:web/**', root });
      const ids = (r: { leases: { lease_id: string }[] }) => r.leases.map((l) => l.lease_id);
      assert.deepEqual(ids(await ok(bob2, '/lease/list', { root })).sort(), [a.lease_id, b.lease_id].sort());
      assert.deepEqual(ids(await alice.lease.list({ root, resource_prefix: 'path:web/' })), [b.lease_id]);
      assert.deepEqual(ids(await alice.lease.list({ root, holder: 'bob' })), [b.lease_id]);
      assert.deepEqual(ids(await alice.lease.list({ root, holder: b.holder })), [b.lease_id], 'the printed holder');
      assert.deepEqual(ids(await alice.lease.list({ root, holder: `${b.holder}-not` })), []);
      assert.deepEqual(ids(await alice.lease.list({ root, resource_prefix: 't-' })), []);
      assert.ok(ids(await alice.lease.list({ resource_prefix: 'path:lib/' })).includes(a.lease_id), 'across roots');
    });

    it(`one account holds at most ${LEASE_LIMITS.perAccount} live reservations across its sessions and roots; one root at most ${LEASE_LIMITS.perSpace}, so a check sees all`, async () => {
      const root = '/work/full';
      const carla = await d.account('carla');
      const sessions: AgentProc[] = [];
      for (let i = 0; i < LEASE_LIMITS.perAccount / LEASE_LIMITS.perHolder; i++) sessions.push(await startAgent(d.url, carla.secret));
      procs.push(...sessions);
      // Four sessions of 64, half of them in another root: the account's count spans both.
      for (const [k, p] of sessions.entries())
        for (let i = 0; i < LEASE_LIMITS.perHolder; i++) await ok(p, '/lease/claim', { resource: `path:carla/s${k}/f${i}.ts`, root: k % 2 ? root : `${root}-other` });
      const fifth = await startAgent(d.url, carla.secret);
      procs.push(fifth);
      const e = await no(fifth, '/lease/claim', { resource: 'path:carla/one-more.ts', root }, 'too_many_leases');
      assert.equal(e.limit, LEASE_LIMITS.perAccount);
      const first = (await carla.client.lease.list({ root, holder: 'carla', limit: 1 })).leases[0]!;
      await refused(carla.client.lease.release({ lease_id: first.lease_id, epoch: first.epoch }), 'lease_lost', {}); // another session's
      const own = (await ok(sessions[1]!, '/lease/list', { root, holder: 'carla', limit: 1 })).leases[0];
      await ok(sessions[1]!, '/lease/release', { lease_id: own.lease_id, epoch: own.epoch });
      await ok(fifth, '/lease/claim', { resource: 'path:carla/one-more.ts', root });

      // The root holds 128 of carla's; fill it to its cap with accounts acting without a session.
      let held = (await alice.lease.list({ root, limit: LEASE_LIMITS.listMax })).leases.length;
      assert.equal(held, 2 * LEASE_LIMITS.perHolder);
      const fillers: Caller[] = [];
      for (let k = 0; held < LEASE_LIMITS.perSpace; k++) {
        const f = await bareCaller(`filler${k}`);
        fillers.push(f);
        for (let i = 0; i < LEASE_LIMITS.perHolder && held < LEASE_LIMITS.perSpace; i++, held++) await d.engine.leases.claim(f, { resource: `path:fill/${k}/f${i}.ts`, root });
      }
      const late = await bareCaller('latecomer');
      await refused(d.engine.leases.claim(late, { resource: 'path:late.ts', root }), 'too_many_leases', { limit: LEASE_LIMITS.perSpace });
      await refused(d.engine.leases.claim(late, { resource: 'path:late.ts', root, mode: 'shared' }), 'too_many_leases', { limit: LEASE_LIMITS.perSpace });
      // Another root is another count.
      await d.engine.leases.claim(late, { resource: 'path:late.ts', root: `${root}-2` });
      // A release makes room; the newest reservation of the full root is seen by check and list.
      const lastFiller = fillers[fillers.length - 1]!;
      const [gone] = (await d.engine.leases.list(lastFiller, { root, holder: lastFiller.account.id, limit: 1 })).leases;
      await d.engine.leases.release(lastFiller, { lease_id: gone!.lease_id, epoch: gone!.epoch });
      const newest = await d.engine.leases.claim(late, { resource: 'path:late.ts', root });
      const all = (await d.engine.store.listLeases({ space: `path:${root}`, now: clock.now(), limit: 10_000 })).map((l) => l.resource);
      assert.equal(all.length, LEASE_LIMITS.perSpace);
      const seen = await alice.lease.check({ root, paths: all });
      assert.equal(seen.conflicts.length, LEASE_LIMITS.perSpace, 'every reservation of the root, its newest too');
      assert.equal(seen.conflicts.find((c) => c.path === 'late.ts')?.lease.lease_id, newest.lease_id);
      assert.deepEqual(
        (await alice.lease.list({ root, holder: 'latecomer' })).leases.map((l) => l.lease_id),
        [newest.lease_id],
      );
      assert.deepEqual(
        (await alice.lease.list({ root, resource_prefix: 'path:late' })).leases.map((l) => l.lease_id),
        [newest.lease_id],
      );
      for (const p of [...sessions, fifth]) await p.exit();
      await d.engine.sweepSessions();
    });

    it('the H2 check at the limits (64 reservations of the costliest glob allowed, 10,000 paths of 48 segments) answers, and other requests are answered while it runs', async () => {
      const root = '/work/h2';
      const mallory = await bareCaller('mallory-h2');
      // `'*/'.repeat(510) + 'qN'` once; now 16 wildcards and 32 segments at most.
      const glob = (n: number) => `**/${'*/'.repeat(LEASE_LIMITS.globWildcards - 1)}q${n}`;
      for (let n = 0; n < LEASE_LIMITS.perHolder; n++) await d.engine.leases.claim(mallory, { resource: `path:${glob(n)}`, root });
      const paths = Array.from({ length: LEASE_LIMITS.checkPaths }, (_, i) => `${'a/'.repeat(47)}${i % 100 === 0 ? `q${i % 64}` : `f${i}`}`);
      assert.ok(Buffer.byteLength(JSON.stringify({ root, paths })) < 1024 * 1024, 'the request fits the body cap');
      const me: Caller = { account: (await d.engine.store.getAccount('alice'))!, session: null };
      const { result, answered } = await answeredDuring(
        () => d.engine.leases.check(me, { root, paths }),
        () => alice.whoami(),
      );
      assert.equal(result.status, 'fulfilled', String((result as PromiseRejectedResult).reason));
      assert.equal((result as PromiseFulfilledResult<{ conflicts: unknown[] }>).value.conflicts.length, 100);
      assert.ok(answered >= 3, `${answered} other requests answered during the check`);
      const viaHttp = await alice.lease.check({ root, paths });
      assert.equal(viaHttp.conflicts.length, 100);
    });

    it(`a check over ${LEASE_LIMITS.checkSteps} steps of work is refused too_large {field: paths}; other requests are answered while it runs`, async () => {
      const root = '/work/costly';
      const mallory = await bareCaller('mallory-check');
      // Each path passes one glob's fixed start and then costs its length times the glob's
      // literal run; the globs themselves are cheap to claim (their starts differ).
      const tag = (n: number) => `_${String(n).padStart(2, '0')}`;
      for (let n = 0; n < LEASE_LIMITS.perHolder; n++) await d.engine.leases.claim(mallory, { resource: `path:${tag(n)}*${'a'.repeat(960)}b*`, root });
      const paths = Array.from({ length: 240 }, (_, i) => `${tag(i % 64)}${'a'.repeat(4000)}`);
      const me: Caller = { account: (await d.engine.store.getAccount('alice'))!, session: null };
      const { result, answered } = await answeredDuring(
        () => d.engine.leases.check(me, { root, paths }),
        () => alice.whoami(),
      );
      const e = rejected(result);
      assert.equal(e.code, 'too_large');
      assert.equal(e.details.field, 'paths');
      assert.equal(e.details.limit, LEASE_LIMITS.checkSteps);
      assert.ok(answered >= 3, `${answered} other requests answered during the check`);
      await refused(alice.lease.check({ root, paths }), 'too_large', { field: 'paths', limit: LEASE_LIMITS.checkSteps });
      // Fewer paths at a time are answered (what the guard does with such a refusal).
      assert.deepEqual((await alice.lease.check({ root, paths: paths.slice(0, 2) })).conflicts, []);
    });

    it(`a claim whose overlap walks pass ${LEASE_LIMITS.claimSteps} steps is refused too_large, claiming nothing; others are answered meanwhile and ordinary claims pass`, async () => {
      const root = '/work/walks';
      const mallory = await bareCaller('mallory-claim');
      // Shared with shared is never walked: these are free to claim, and costly to walk against.
      const stars = `*${'a*'.repeat(LEASE_LIMITS.globWildcards - 1)}`;
      const costly = (end: string) => `${stars}${'a'.repeat(LEASE_LIMITS.globBytes - stars.length - end.length)}${end}`;
      for (let n = 0; n < 32; n++) await d.engine.leases.claim(mallory, { resource: `path:${costly(`c${n}`)}`, root, mode: 'shared' });
      const before = (await d.engine.store.listLeases({ space: `path:${root}`, now: clock.now(), limit: 10_000 })).length;
      const { result, answered } = await answeredDuring(
        () => d.engine.leases.claim(mallory, { resource: `path:${costly('b')}`, root }),
        () => alice.whoami(),
      );
      const e = rejected(result);
      assert.equal(e.code, 'too_large');
      assert.equal(e.details.field, 'resource');
      assert.equal(e.details.limit, LEASE_LIMITS.claimSteps);
      assert.ok(answered >= 3, `${answered} other requests answered during the claim`);
      assert.equal((await d.engine.store.listLeases({ space: `path:${root}`, now: clock.now(), limit: 10_000 })).length, before, 'nothing claimed');
      // Globs people write cost little against the same reservations.
      for (const g of ['src/parser/**', 'docs/*.md', 'test/**/fixtures/', 'lib/[ab].ts']) await alice.lease.claim({ resource: `path:${g}`, root });
    });

    it('a reservation stored before the limits, over them, is still matched and compared: its root keeps working', async () => {
      const root = '/work/old';
      const now = clock.now();
      const old = `${'*/'.repeat(40)}old.ts`;
      const r = await d.engine.store.claimLease(
        {
          id: 'l-storedbefore1',
          space: `path:${root}`,
          resource: old,
          mode: 'exclusive',
          holderAccount: 'bob',
          holderSession: null,
          holderLineage: null,
          holderAddress: 'bob',
          reason: null,
          createdAt: now,
          expiresAt: now + 600_000,
          attempt: 1,
        },
        { now, maxPerHolder: LEASE_LIMITS.perHolder, conflicts: () => false },
      );
      assert.equal(r.kind, 'claimed');
      const deep = `${'d/'.repeat(40)}old.ts`;
      assert.deepEqual(
        (await alice.lease.check({ root, paths: [deep, 'x.ts'] })).conflicts.map((c) => [c.path, c.lease.lease_id]),
        [[deep, 'l-storedbefore1']],
      );
      await refused(alice.lease.claim({ resource: `path:${'*/'.repeat(12)}**/old.ts`, root }), 'lease_conflict');
      await alice.lease.claim({ resource: 'path:src/*.md', root });
    });

    it('m4a_reserve through the MCP SDK: described, within its token share, claims all globs or none', async (t) => {
      const mia = await d.account('mia');
      const client = new Client({ name: 'leases-test', version: '0.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', d.url), { requestInit: { headers: { Authorization: `Bearer ${mia.secret}` } } }));
      try {
        const tool = (await client.listTools()).tools.find((t) => t.name === 'm4a_reserve');
        assert.ok(tool, 'm4a_reserve is listed');
        for (const [k, p] of Object.entries(tool.inputSchema.properties as Record<string, { description?: string }>)) assert.ok(p.description, `${k} is described`);
        const tokens = getEncoding('o200k_base').encode(JSON.stringify(tool)).length;
        t.diagnostic(`m4a_reserve: ${tokens} tokens`);
        assert.ok(tokens <= 170, `m4a_reserve costs ${tokens} tokens`);
        const callTool = async (args: Record<string, unknown>) => {
          const r = (await client.callTool({ name: 'm4a_reserve', arguments: args })) as { isError?: boolean; content: { text: string }[] };
          return { isError: r.isError === true, body: JSON.parse(r.content[0]!.text) };
        };
        const root = '/work/mcp';
        const got = await callTool({ action: 'claim', paths: ['one/**', 'two/*.ts'], root, reason: 'via mcp', ttl_secs: 600 });
        assert.equal(got.isError, false, JSON.stringify(got.body));
        assert.deepEqual(
          got.body.leases.map((l: any) => l.resource),
          ['path:one/**', 'path:two/*.ts'],
        );
        await ok(bob, '/lease/claim', { resource: 'path:three/x.ts', root });
        const all = await callTool({ action: 'claim', paths: ['four/**', 'three/*'], root });
        assert.equal(all.isError, true);
        assert.equal(all.body.error.code, 'lease_conflict');
        const listed = await callTool({ action: 'list', root });
        const resources = listed.body.leases.map((l: any) => l.resource).sort();
        assert.deepEqual(resources, ['path:one/**', 'path:three/x.ts', 'path:two/*.ts'], 'four/** was released again: all or none');
        assert.ok(!listed.body.leases.some((l: any) => l.resource === 'path:four/**'));
        const shared = await callTool({ action: 'claim', paths: ['five/**'], root, shared: true });
        assert.equal(shared.body.leases[0].mode, 'shared');
        assert.equal((await ok(bob, '/lease/claim', { resource: 'path:five/x.ts', root, mode: 'shared' })).mode, 'shared');
        await no(bob, '/lease/claim', { resource: 'path:five/y.ts', root }, 'lease_conflict');
        const [first] = got.body.leases;
        const renewed = await callTool({ action: 'renew', lease_id: first.lease_id, epoch: first.epoch, ttl_secs: 1200 });
        assert.equal(renewed.body.expires_at, new Date(clock.now() + 1_200_000).toISOString());
        const bad = await callTool({ action: 'renew', lease_id: first.lease_id });
        assert.equal(bad.body.error.code, 'malformed');
        assert.equal(bad.body.error.field, 'epoch');
        const glob = await callTool({ action: 'claim', paths: ['ok/**', 'bad['], root });
        assert.equal(glob.body.error.field, 'paths.1');
        const done = await callTool({ action: 'release', lease_id: first.lease_id, epoch: first.epoch });
        assert.equal(done.isError, false);
        const lostIt = await callTool({ action: 'release', lease_id: first.lease_id, epoch: first.epoch });
        assert.equal(lostIt.body.error.code, 'lease_lost');
      } finally {
        await client.close();
      }
    });
  });
}
