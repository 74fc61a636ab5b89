// Finding I (login throttle): a guesser must not keep a person out, even while it keeps guessing,
// and the bound on guesses per account must hold. The daemon keys the throttle by the connection's
// peer address (never a header), and every loopback address is one key: a local process cannot
// multiply its allowance by binding 127.0.0.2, 127.0.0.3 … Over HTTP that is all a test can reach,
// so the per-address keying proper runs through the daemon's own WebAuth code with non-loopback
// address strings, on the daemon's own store (the records daemons sharing a store share); the
// HTTP routes (view, clear) then read and clear those very records.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestDaemon, type TestDaemon } from '../../support/test-daemon.js';
import { PASSWORD, createPerson } from '../../web/web-helpers.js';
import { assertUnchanged, sleep, storeSnapshot } from '../helpers.js';
import { callAs, loginFrom, webFrom } from '../../web/web-peer.js';
import { WebAuth } from '../../../src/engine/web-auth.js';
import { systemClock } from '../../../src/engine/clock.js';
import type { ThrottleOptions } from '../../../src/engine/login-throttle.js';
import { argon2Hasher } from '../../../src/doors/web/argon2-hasher.js';
import { clientAddress } from '../../../src/doors/web/client-address.js';
import { MailError } from '../../../src/wire/errors.js';

const guess = (d: TestDaemon, from: string, account: string, password: string, headers?: Record<string, string>) =>
  webFrom(d.url, 'login', { from, body: { account, password }, ...(headers ? { headers } : {}) });

const addrRecords = async (d: TestDaemon, account: string): Promise<string> => JSON.stringify(await d.store.listRecords('web_throttle_addr', `${account}/`, 1000));
const throttleRecords = async (d: TestDaemon, account: string): Promise<string> =>
  JSON.stringify([await addrRecords(d, account), await d.store.getRecord('web_throttle_account', account)]);

/** One login through WebAuth from `address`: 'ok', or the refusal's error details. */
async function tryLogin(auth: WebAuth, account: string, password: string, address: string): Promise<'ok' | Record<string, any>> {
  try {
    await auth.login(account, password, address);
    return 'ok';
  } catch (err) {
    if (!(err instanceof MailError)) throw err;
    return { code: err.code, message: err.message, ...err.details };
  }
}

describe('I: the login throttle keeps guessers out, not the person', () => {
  it('every loopback address is one client; other addresses are their own, IPv6 per /64', () => {
    for (const a of ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.255.255.254', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.3', '::FFFF:7f00:5'])
      assert.equal(clientAddress(a), 'loopback', a);
    assert.equal(clientAddress('192.0.2.7'), '192.0.2.7');
    assert.equal(clientAddress('::ffff:192.0.2.7'), '192.0.2.7');
    assert.equal(clientAddress('::ffff:c000:207'), '192.0.2.7');
    assert.equal(clientAddress('128.0.0.1'), '128.0.0.1');
    assert.equal(clientAddress('2001:db8:1:2::5'), '2001:db8:1:2::/64');
    assert.equal(clientAddress('2001:db8:1:2:ffff::9%eth0'), '2001:db8:1:2::/64');
    assert.equal(clientAddress('::2'), '0:0:0:0::/64', 'only ::1 is loopback');
    assert.equal(clientAddress(undefined), 'unknown');
  });

  describe('over HTTP from loopback', () => {
    let d: TestDaemon;
    before(async () => {
      d = await startTestDaemon({ web: { throttle: { baseMs: 300, maxMs: 1200, forgetMs: 60_000, accountBurst: 6, accountRefillMs: 1200 } } });
      await createPerson(d, 'carol');
      await createPerson(d, 'fay');
    });
    after(() => d.stop());

    it('127.0.0.2 and 127.0.0.3 are one client: a wrong password from one delays the other, and headers change nothing', async () => {
      const wrong = await guess(d, '127.0.0.2', 'carol', 'wrong 1');
      assert.equal(wrong.json.error.code, 'bad_credentials');
      assert.equal(wrong.json.error.failures, 1);
      assert.deepEqual(
        (await d.store.listRecords('web_throttle_addr', 'carol/', 10)).map((r) => r.id),
        ['carol/loopback'],
      );
      const before = await throttleRecords(d, 'carol');
      for (const headers of [undefined, { 'x-forwarded-for': '192.0.2.1', 'x-real-ip': '10.9.9.9' }]) {
        const other = await guess(d, '127.0.0.3', 'carol', PASSWORD, headers);
        assert.equal(other.status, 429, JSON.stringify(other.json));
        assert.equal(other.json.error.scope, 'address');
        assert.equal(other.setCookie, undefined, 'no login');
      }
      assert.equal(await throttleRecords(d, 'carol'), before, 'a refused attempt neither extends the delay nor spends the allowance');
      await sleep(wrong.json.error.retry_after_ms + 20);
      const again = await guess(d, '127.0.0.3', 'carol', 'wrong 2');
      assert.equal(again.json.error.failures, 2, 'the count is shared');
      assert.equal(again.json.error.retry_after_ms, 600);
      await sleep(620);
      assert.equal((await guess(d, '127.0.0.4', 'carol', PASSWORD)).status, 200);
      assert.deepEqual(await d.store.listRecords('web_throttle_addr', 'carol/', 10), [], 'the right password clears the shared record');
    });

    it("rotating loopback addresses gets one check per delay, and never uses up the account's allowance", async () => {
      let checked = 0;
      for (let i = 10; i < 40; i++) {
        const r = await guess(d, `127.0.0.${i}`, 'fay', `guess ${i}`);
        if (r.json.error.code === 'bad_credentials') checked++;
        else assert.equal(r.json.error.scope, 'address', JSON.stringify(r.json));
      }
      assert.ok(checked <= 2, `${checked} of 30 quick guesses from 30 loopback addresses were checked`);
      const fay = await sleep(1300).then(() => loginFrom(d.url, '127.0.0.1', 'fay', PASSWORD));
      const view = await callAs(d.url, fay, 'login-throttle');
      assert.equal(view.json.account_retry_after_ms, 0);
    });
  });

  describe("per address, through the daemon's WebAuth on its store", () => {
    const THROTTLE: Partial<ThrottleOptions> = { baseMs: 50, maxMs: 200, forgetMs: 60_000, accountBurst: 5, accountRefillMs: 200 };
    let d: TestDaemon;
    let auth: WebAuth;
    before(async () => {
      d = await startTestDaemon({ web: { throttle: THROTTLE } });
      auth = new WebAuth(d.store, systemClock, argon2Hasher, { throttle: THROTTLE });
      await createPerson(d, 'carol');
      await createPerson(d, 'gus');
    });
    after(() => d.stop());

    it("one address's guesses slow that address only, however long it keeps guessing; the person gets in from another every time", async () => {
      const delays: number[] = [];
      for (let round = 0; round < 10; round++) {
        const wrong = await tryLogin(auth, 'carol', `wrong ${round}`, '198.51.100.7');
        assert.ok(wrong !== 'ok' && wrong.code === 'bad_credentials', `round ${round}: ${JSON.stringify(wrong)}`);
        delays.push(wrong.retry_after_ms);
        const before = await throttleRecords(d, 'carol');
        const early = await tryLogin(auth, 'carol', PASSWORD, '198.51.100.7');
        assert.ok(early !== 'ok' && early.code === 'rate_limited' && early.scope === 'address', `round ${round}: even the right password waits, unchecked`);
        assert.equal(await throttleRecords(d, 'carol'), before, 'a refused attempt changes nothing');
        assert.equal(await tryLogin(auth, 'carol', PASSWORD, '203.0.113.9'), 'ok', `round ${round}: the person, at another address, is kept out`);
        await sleep(wrong.retry_after_ms + 10);
      }
      assert.deepEqual(delays, [50, 100, 200, 200, 200, 200, 200, 200, 200, 200], "each wrong password doubles the address's delay up to maxMs");
      const view = await callAs(d.url, await loginFrom(d.url, '127.0.0.1', 'carol', PASSWORD), 'login-throttle');
      assert.equal(view.json.wrong_passwords, 10);
      assert.equal(view.json.addresses, 1);
      assert.equal(view.json.account_retry_after_ms, 0, "one address at its pace never uses up the account's allowance");
    });

    it('parallel guesses from one address get one check: the second and third are refused before any await', async () => {
      const rs = await Promise.all(['p1', 'p2', 'p3'].map((p) => tryLogin(auth, 'gus', p, '192.0.2.50')));
      const codes = rs.map((r) => (r === 'ok' ? 'ok' : `${r.code}/${r.scope ?? ''}`)).sort();
      assert.deepEqual(codes, ['bad_credentials/', 'rate_limited/address', 'rate_limited/address'], JSON.stringify(rs));
      const rec = await d.store.getRecord('web_throttle_addr', 'gus/192.0.2.50');
      assert.equal(JSON.parse(rec!.value).failures, 1);
    });
  });

  describe('many guessing addresses, and clearing', () => {
    const BURST = 8;
    const THROTTLE: Partial<ThrottleOptions> = { baseMs: 100, maxMs: 5000, forgetMs: 60_000, accountBurst: BURST, accountRefillMs: 5000 };
    let d: TestDaemon;
    let auth: WebAuth;
    before(async () => {
      d = await startTestDaemon({ web: { throttle: THROTTLE } });
      auth = new WebAuth(d.store, systemClock, argon2Hasher, { throttle: THROTTLE });
      await createPerson(d, 'dana');
      await createPerson(d, 'erin');
    });
    after(() => d.stop());

    /** 30 guesses from 30 addresses; how many were checked (the rest refused for the account). */
    async function attack(round: number): Promise<{ checked: number; bound: number }> {
      const t0 = Date.now();
      let checked = 0;
      for (let i = 0; i < 30; i++) {
        const r = await tryLogin(auth, 'dana', `guess ${round}.${i}`, `10.0.${i}.1`);
        assert.ok(r !== 'ok');
        if (r.code === 'bad_credentials') checked++;
        else {
          assert.equal(r.code, 'rate_limited', JSON.stringify(r));
          assert.equal(r.scope, 'account');
          assert.match(r.message, /clear the delay from a browser where you are logged in/);
        }
      }
      return { checked, bound: BURST + Math.ceil((Date.now() - t0) / 5000) };
    }

    it("the account's bound holds across addresses; only the person, logged in, clears it, and only the allowance and their own address", async () => {
      const dana = await loginFrom(d.url, '127.0.0.1', 'dana', PASSWORD);
      const erin = await loginFrom(d.url, '127.0.0.1', 'erin', PASSWORD);
      // A typo of the person's own, at the address she will clear from.
      assert.equal((await guess(d, '127.0.0.1', 'dana', 'typo')).json.error.code, 'bad_credentials');
      const first = await attack(1);
      assert.ok(first.checked >= BURST - 1 && first.checked <= first.bound, `${first.checked} wrong passwords checked from 30 addresses: the bound is ${first.bound}`);

      // Now the person, from a fresh address, waits too: the case clearing is for.
      await sleep(150);
      const kept = await guess(d, '127.0.0.1', 'dana', PASSWORD);
      assert.equal(kept.status, 429);
      assert.equal(kept.json.error.scope, 'account');
      assert.match(kept.json.error.message, /clear the delay from a browser where you are logged in/);
      const elsewhere = await tryLogin(auth, 'dana', PASSWORD, '203.0.113.77');
      assert.ok(elsewhere !== 'ok' && elsewhere.scope === 'account', 'from any address');
      const view = await callAs(d.url, dana, 'login-throttle');
      assert.equal(view.json.wrong_passwords, first.checked + 1);
      assert.equal(view.json.addresses, first.checked + 1);
      assert.ok(view.json.account_retry_after_ms > 0);

      // Nobody clears another person's delays: not another person, not by naming the account, not
      // without the login's CSRF token, not as an operator route.
      const before = await throttleRecords(d, 'dana');
      const snap = await storeSnapshot(d.store);
      assert.deepEqual(
        (await callAs(d.url, erin, 'login-throttle/clear')).json,
        { allowance_restored: false, address_cleared: false, addresses_waiting: 0 },
        'erin clears her own account: nothing',
      );
      const naming = await callAs(d.url, erin, 'login-throttle/clear', { account: 'dana' });
      assert.equal(naming.status, 400);
      assert.equal(naming.json.error.code, 'malformed');
      assert.equal((await webFrom(d.url, 'login-throttle/clear', { cookie: dana.cookie })).json.error.code, 'csrf_failed');
      assert.equal((await webFrom(d.url, 'login-throttle/clear', { cookie: dana.cookie, csrf: erin.csrf })).json.error.code, 'csrf_failed');
      assert.equal((await webFrom(d.url, 'login-throttle/clear', {})).json.error.code, 'unauthenticated');
      assert.equal((await callAs(d.url, erin, 'admin/login-throttle/clear', { account: 'dana' })).json.error.code, 'unknown_route');
      assert.equal(await throttleRecords(d, 'dana'), before, "dana's delays are as they were");
      await assertUnchanged(d.store, snap, 'refused clears');
      assert.equal((await guess(d, '127.0.0.1', 'dana', PASSWORD)).status, 429, 'still waiting');

      // Dana clears: the allowance is full and her own address's record gone; the guessers' stay.
      const guessers = JSON.stringify((await d.store.listRecords('web_throttle_addr', 'dana/', 1000)).filter((r) => r.id !== 'dana/loopback'));
      const cleared = await callAs(d.url, dana, 'login-throttle/clear');
      assert.equal(cleared.status, 200);
      assert.equal(cleared.json.allowance_restored, true);
      assert.equal(cleared.json.address_cleared, true, 'her own address had her typo');
      assert.equal(await d.store.getRecord('web_throttle_account', 'dana'), null);
      assert.equal(await d.store.getRecord('web_throttle_addr', 'dana/loopback'), null);
      assert.equal(JSON.stringify(await d.store.listRecords('web_throttle_addr', 'dana/', 1000)), guessers, 'the guessing addresses keep their records');
      assert.equal((await guess(d, '127.0.0.1', 'dana', PASSWORD)).status, 200, 'her right password gets in');

      // The click bought the guesser one allowance, no more; its addresses' counts went on.
      await sleep(120);
      const second = await attack(2);
      assert.ok(second.checked >= BURST - 1 && second.checked <= second.bound, `after one clear: ${second.checked} checked, the bound is ${second.bound}`);
      const counts = (await d.store.listRecords('web_throttle_addr', 'dana/', 1000)).map((r) => JSON.parse(r.value).failures as number);
      assert.ok(counts.includes(2), `an address that guessed before the clear counts on from its old failures: ${counts.join(',')}`);
      assert.equal((await guess(d, '127.0.0.1', 'dana', PASSWORD)).json.error.scope, 'account', "used up again: the next click is the person's");
    });

    it('names that are no account are throttled in memory: guessing them writes nothing to the store', async () => {
      const snap = await storeSnapshot(d.store);
      let last: 'ok' | Record<string, any> = 'ok';
      for (let i = 50; i < 75; i++) last = await tryLogin(auth, 'nobody', 'a guess', `10.1.${i}.1`);
      assert.ok(last !== 'ok' && last.scope === 'account', 'the same bound for a name that is no account');
      for (let i = 2; i < 6; i++) assert.ok([401, 429].includes((await guess(d, `127.0.0.${i}`, 'nobody', 'a guess')).status));
      assert.deepEqual(await d.store.listRecords('web_throttle_addr', 'nobody/', 10), []);
      assert.equal(await d.store.getRecord('web_throttle_account', 'nobody'), null);
      await assertUnchanged(d.store, snap, 'guessing unknown names');
    });
  });
});
