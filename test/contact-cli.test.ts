// m4a contacts …, m4a policy set, m4a admin policy set and m4a send --request-contact, run as a user
// runs them (the built CLI, a daemon found through its data directory, each party with its own
// account): a policy set, a refused send, a held one, the request listed and accepted, a decline.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { CLI } from './support/shell-agents.js';
import { startTestDaemon, type StoreKind, type TestDaemon } from './support/test-daemon.js';

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

const storeKind: StoreKind = process.env.M4A_TEST_STORE === 'memory' ? 'memory' : 'sqlite';

describe(`m4a contacts / policy (${storeKind} store)`, () => {
  let d: TestDaemon;
  let home: string;
  let env: Record<string, string>;
  const cli = (args: string[]) =>
    new Promise<Run>((resolve) =>
      execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );
  const as = (account: string, args: string[]) => cli([...args, '--account', account]);
  const json = async (account: string, args: string[]) => {
    const r = await as(account, [...args, '--json']);
    assert.equal(r.status, 0, `${account}: ${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return JSON.parse(r.stdout);
  };

  before(async () => {
    d = await startTestDaemon({ storeKind });
    home = mkdtempSync(join(tmpdir(), 'm4a-contact-cli-'));
    const accounts: Record<string, { secret: string }> = {};
    for (const id of ['bob', 'carol', 'dave']) accounts[id] = { secret: (await d.account(id)).secret };
    mkdirSync(join(home, 'mail4agent'));
    writeFileSync(join(home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts }), { mode: 0o600 });
    env = { HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir };
  });
  after(async () => {
    await d.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('sets a policy, holds a send with --request-contact, lists, accepts and declines', async () => {
    assert.deepEqual(await json('bob', ['policy', 'set', 'contacts_only']), { account: 'bob', policy: 'contacts_only' });
    const text = await as('bob', ['policy', 'set', 'contacts_only']);
    assert.match(text.stdout, /^policy contacts_only: only your contacts/);
    const bad = await as('bob', ['policy', 'set', 'closed']);
    assert.equal(bad.status, 2, 'an unknown policy is a usage error');

    const refused = await as('carol', ['send', 'bob', 'hi', 'there', '--json']);
    assert.equal(refused.status, 1);
    assert.deepEqual((({ code, recipient, policy }) => ({ code, recipient, policy }))(JSON.parse(refused.stderr).error), {
      code: 'contact_refused',
      recipient: 'bob',
      policy: 'contacts_only',
    });
    const held = await json('carol', ['send', 'bob', 'first', 'hello bob', '--request-contact']);
    assert.deepEqual(held.held, { recipient: 'bob', policy: 'contacts_only' });
    const heldText = await as('carol', ['send', 'bob', 'second', 'again', '--request-contact']);
    assert.equal(heldText.status, 0, heldText.stderr);
    assert.match(heldText.stdout, /^held m-\S+ for bob \(its policy: contacts_only\)/);

    const list = await json('bob', ['contacts', 'list']);
    assert.equal(list.policy, 'contacts_only');
    assert.deepEqual(
      list.incoming.map((r: { account: string; held: number; state: string }) => [r.account, r.held, r.state]),
      [['carol', 2, 'pending']],
    );
    const listText = await as('bob', ['contacts', 'list']);
    assert.match(listText.stdout, /asking you\n\s+carol\s+pending\s+2 messages held/);

    const accepted = await json('bob', ['contacts', 'accept', 'carol']);
    assert.equal(accepted.delivered.length, 2);
    assert.equal(accepted.delivered[0], held.message_id);
    const again = await as('bob', ['contacts', 'accept', 'carol']);
    assert.equal(again.stdout.trim(), 'accepted carol', 'nothing more to deliver');
    assert.deepEqual(
      (await json('bob', ['contacts', 'list'])).contacts.map((c: { account: string }) => c.account),
      ['carol'],
    );

    await json('dave', ['send', 'bob', 'ask', 'me too', '--request-contact']);
    const declined = await as('bob', ['contacts', 'decline', 'dave']);
    assert.equal(declined.stdout.trim(), 'declined dave; 1 held message returned');
    assert.deepEqual(await json('bob', ['contacts', 'decline', 'dave']), { ok: true, returned: 0 });
    assert.equal((await json('bob', ['contacts', 'remove', 'carol'])).ok, true);
  });

  it('the operator sets an account policy with m4a admin policy set', async () => {
    const set = await cli(['admin', 'policy', 'set', 'dave', 'block_all', '--json']);
    assert.equal(set.status, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout), { account: 'dave', policy: 'block_all' });
    assert.equal((await d.store.getAccount('dave'))!.contactPolicy, 'block_all');
    const text = await cli(['admin', 'policy', 'set', 'dave', 'open']);
    assert.equal(text.stdout.trim(), 'dave: policy open');
    const unknown = await cli(['admin', 'policy', 'set', 'nobody', 'open', '--json']);
    assert.equal(unknown.status, 1);
    assert.equal(JSON.parse(unknown.stderr).error.code, 'unknown_participant');
  });
});
