// Finding I (login throttle): a guesser must not keep a person out, even while it keeps guessing,
// and the bound on guesses per account must hold. Over real HTTP from distinct loopback source
// addresses (127.0.0.x; the daemon keys the throttle by the connection's peer address, never a
// header): one address's guesses slow that address only; many addresses together use up the
// account's allowance, and then only the person, logged in elsewhere, can clear it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestDaemon, type TestDaemon } from '../../support/test-daemon.js';
import { PASSWORD, createPerson } from '../../web/web-helpers.js';
import { assertUnchanged, sleep, storeSnapshot } from '../helpers.js';
import { callAs, loginFrom, webFrom } from '../../web/web-peer.js';

const guess = (d: TestDaemon, from: string, account: string, password: string, headers?: Record<string, string>) =>
  webFrom(d.url, 'login', { from, body: { account, password }, ...(headers ? { headers } : {}) });

const throttleRecords = async (d: TestDaemon, account: string): Promise<string> =>
  JSON.stringify([await d.store.listRecords('web_throttle_addr', `${account}/`, 1000), await d.store.getRecord('web_throttle_account', account)]);

describe('I: the login throttle keeps guessers out, not the person', () => {
  describe('one guessing address', () => {
    let d: TestDaemon;
    before(async () => {
      d = await startTestDaemon({ web: { throttle: { baseMs: 100, maxMs: 400, forgetMs: 60_000, accountBurst: 5, accountRefillMs: 400 } } });
      await createPerson(d, 'carol');
    });
    after(() => d.stop());

    it('slows only its own address, however long it keeps guessing; the person gets in from another address every time', async () => {
      const delays: number[] = [];
      for (let round = 0; round < 14; round++) {
        const wrong = await guess(d, '127.0.0.2', 'carol', `wrong ${round}`);
        assert.equal(wrong.json.error.code, 'bad_credentials', `round ${round}: ${JSON.stringify(wrong.json)}`);
        delays.push(wrong.json.error.retry_after_ms);
        // The bound per (account, address): during the delay even the right password waits,
        // unchecked, and a forged X-Forwarded-For changes nothing.
        const before = await throttleRecords(d, 'carol');
        for (const headers of [undefined, { 'x-forwarded-for': `127.0.0.${100 + round}`, 'x-real-ip': '10.9.9.9' }]) {
          const early = await guess(d, '127.0.0.2', 'carol', PASSWORD, headers);
          assert.equal(early.status, 429, `round ${round}`);
          assert.equal(early.json.error.code, 'rate_limited');
          assert.equal(early.json.error.scope, 'address');
          assert.equal(early.setCookie, undefined, 'no login');
        }
        assert.equal(await throttleRecords(d, 'carol'), before, 'a refused attempt neither extends the delay nor spends the allowance');
        // The person, elsewhere, is not kept out.
        const person = await guess(d, '127.0.0.3', 'carol', PASSWORD);
        assert.equal(person.status, 200, `round ${round}: the person is kept out: ${JSON.stringify(person.json)}`);
        await sleep(wrong.json.error.retry_after_ms + 20);
      }
      assert.deepEqual(delays, [100, 200, 400, 400, 400, 400, 400, 400, 400, 400, 400, 400, 400, 400], 'each wrong password doubles the address\'s delay up to maxMs');
      const view = await callAs(d.url, await loginFrom(d.url, '127.0.0.3', 'carol', PASSWORD), 'login-throttle');
      assert.equal(view.json.wrong_passwords, 14);
      assert.equal(view.json.addresses, 1);
      assert.equal(view.json.account_retry_after_ms, 0, 'one address at its pace never uses up the account\'s allowance');
    });
  });

  describe('many guessing addresses', () => {
    let d: TestDaemon;
    const BURST = 8;
    before(async () => {
      d = await startTestDaemon({ web: { throttle: { baseMs: 100, maxMs: 5000, forgetMs: 60_000, accountBurst: BURST, accountRefillMs: 5000 } } });
      await createPerson(d, 'dana');
      await createPerson(d, 'erin');
    });
    after(() => d.stop());

    it('the account\'s bound holds across addresses; only the person, logged in elsewhere, clears it', async () => {
      const dana = await loginFrom(d.url, '127.0.0.3', 'dana', PASSWORD);
      const erin = await loginFrom(d.url, '127.0.0.5', 'erin', PASSWORD);
      const t0 = Date.now();
      let wrong = 0;
      let refused = 0;
      for (let i = 10; i < 40; i++) {
        const r = await guess(d, `127.0.0.${i}`, 'dana', `guess ${i}`);
        if (r.json.error.code === 'bad_credentials') wrong++;
        else {
          assert.equal(r.status, 429, JSON.stringify(r.json));
          assert.equal(r.json.error.scope, 'account');
          assert.match(r.json.error.message, /clear the delay from a browser where you are logged in/);
          refused++;
        }
      }
      const refills = Math.ceil((Date.now() - t0) / 5000);
      assert.ok(wrong >= BURST && wrong <= BURST + refills, `${wrong} wrong passwords were checked from 30 addresses: the bound is ${BURST} + ${refills}`);
      assert.equal(wrong + refused, 30);

      // Now the person, from a fresh address, waits too: the case clearing is for.
      const kept = await guess(d, '127.0.0.4', 'dana', PASSWORD);
      assert.equal(kept.status, 429);
      assert.equal(kept.json.error.scope, 'account');
      const view = await callAs(d.url, dana, 'login-throttle');
      assert.equal(view.json.wrong_passwords, wrong);
      assert.equal(view.json.addresses, wrong);
      assert.ok(view.json.account_retry_after_ms > 0);

      // Nobody clears another person's delays: not another person, not by naming the account, not
      // without the login's CSRF token, not as an operator route.
      const before = await throttleRecords(d, 'dana');
      const snap = await storeSnapshot(d.store);
      assert.equal((await callAs(d.url, erin, 'login-throttle/clear')).json.cleared, 0, 'erin clears her own account: nothing');
      const naming = await callAs(d.url, erin, 'login-throttle/clear', { account: 'dana' });
      assert.equal(naming.status, 400);
      assert.equal(naming.json.error.code, 'malformed');
      const noToken = await webFrom(d.url, 'login-throttle/clear', { from: '127.0.0.3', cookie: dana.cookie });
      assert.equal(noToken.json.error.code, 'csrf_failed');
      const otherToken = await webFrom(d.url, 'login-throttle/clear', { from: '127.0.0.3', cookie: dana.cookie, csrf: erin.csrf });
      assert.equal(otherToken.json.error.code, 'csrf_failed');
      assert.equal((await webFrom(d.url, 'login-throttle/clear', { from: '127.0.0.3' })).json.error.code, 'unauthenticated');
      assert.equal((await callAs(d.url, erin, 'admin/login-throttle/clear', { account: 'dana' })).json.error.code, 'unknown_route');
      assert.equal(await throttleRecords(d, 'dana'), before, 'dana\'s delays are as they were');
      await assertUnchanged(d.store, snap, 'refused clears');
      assert.equal((await guess(d, '127.0.0.4', 'dana', PASSWORD)).status, 429, 'still waiting');

      // Dana, logged in elsewhere, clears them; then her right password gets in from anywhere.
      const cleared = await callAs(d.url, dana, 'login-throttle/clear');
      assert.equal(cleared.status, 200);
      assert.equal(cleared.json.cleared, wrong, 'every address that was waiting');
      assert.equal((await guess(d, '127.0.0.4', 'dana', PASSWORD)).status, 200);
      assert.deepEqual((await callAs(d.url, dana, 'login-throttle')).json, { wrong_passwords: 0, addresses: 0, account_retry_after_ms: 0 });
    });

    it('names that are no account are throttled in memory: guessing them writes nothing to the store', async () => {
      const snap = await storeSnapshot(d.store);
      for (let i = 50; i < 70; i++) {
        const r = await guess(d, `127.0.0.${i}`, 'nobody', 'a guess');
        assert.ok(r.status === 401 || r.status === 429, JSON.stringify(r.json));
      }
      assert.equal((await guess(d, '127.0.0.70', 'nobody', 'a guess')).json.error.scope, 'account', 'the same bound for a name that is no account');
      assert.deepEqual(await d.store.listRecords('web_throttle_addr', 'nobody/', 10), []);
      assert.equal(await d.store.getRecord('web_throttle_account', 'nobody'), null);
      await assertUnchanged(d.store, snap, 'guessing unknown names');
    });
  });
});
