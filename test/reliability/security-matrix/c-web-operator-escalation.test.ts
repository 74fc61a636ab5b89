// Finding C: a person on the browser's operator page must not be able to obtain an operator secret,
// since any local process holding one can set a wake chain, and a chain runs programs. Over real HTTP
// as a logged-in operator person: every way to create, hand out or take away an operator credential
// is refused by name (permission_denied {need: "local", field}) and changes nothing; every other
// operator route the browser reaches is classified here; no secret the browser hands out sets a chain.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OPERATIONS, OPERATION_NAMES } from '../../../src/wire/operations.js';

/** Operator routes (bearer) and wake routes (operator on this machine), from the table. */
const ADMIN_PATHS = OPERATION_NAMES.filter((n) => OPERATIONS[n].callers.includes('operator')).map((n) => OPERATIONS[n].path);
const WAKE_PATHS = OPERATION_NAMES.filter((n) => OPERATIONS[n].callers.includes('local')).map((n) => OPERATIONS[n].path);
import { startTestDaemon, type TestDaemon } from '../../support/test-daemon.js';
import { PASSWORD, call, createPerson, login, type Login } from '../../web/web-helpers.js';
import { assertEnvelope, assertUnchanged, http, storeSnapshot } from '../helpers.js';

/** The envelope check reads status and body (fetch's Headers are not node's header record). */
const bare = (r: { status: number; json: unknown }) => ({ status: r.status, json: r.json });
const COMMAND_CHAIN = (account: string) => ({ account, steps: [{ kind: 'command', argv: ['/bin/true'] }] });

describe('C: the browser door cannot mint an operator credential', () => {
  let d: TestDaemon;
  let olga: Login;

  before(async () => {
    d = await startTestDaemon();
    await createPerson(d, 'olga', { operator: true });
    await createPerson(d, 'oscar', { operator: true });
    await createPerson(d, 'pat');
    await d.account('codex');
    olga = await login(d.url, 'olga');
  });
  after(() => d.stop());

  const chains = async (): Promise<string> => JSON.stringify((await d.operator.admin.wakeList()).chains);

  it('refuses an operator account or person, and rotating or removing an operator account, by name, changing nothing', async () => {
    const attempts: [string, unknown, string][] = [
      ['admin/account/add', { id: 'x', permissions: { operator: true } }, 'permissions.operator'],
      ['admin/account/add', { id: 'x', kind: 'service', label: 'ops', permissions: { send: true, read: true, urgent: true, operator: true } }, 'permissions.operator'],
      ['admin/account/add', { id: 'x', kind: 'human', permissions: { operator: true } }, 'permissions.operator'],
      ['admin/user/create', { id: 'y', password: PASSWORD, operator: true }, 'operator'],
      // A rotate answers with the new secret: of an operator account, that is an operator secret.
      ['admin/account/rotate', { id: 'operator' }, 'id'],
      ['admin/account/rotate', { id: 'olga' }, 'id'],
      ['admin/account/rotate', { id: 'oscar' }, 'id'],
      // A remove would take the local operator's credential away (or another operator's).
      ['admin/account/remove', { id: 'operator' }, 'id'],
      ['admin/account/remove', { id: 'oscar' }, 'id'],
    ];
    for (const [name, body, field] of attempts) {
      const before = await storeSnapshot(d.store);
      const wakeBefore = await chains();
      const r = await call(d.url, olga, name, body);
      const where = `${name} ${JSON.stringify(body)}`;
      assert.equal(assertEnvelope(bare(r), where), 'permission_denied', where);
      assert.equal(r.json.error.need, 'local', where);
      assert.equal(r.json.error.field, field, where);
      assert.match(r.json.error.message, /on the machine/, where);
      assert.ok(!('secret' in r.json) && !('account' in r.json), `${where}: no secret in the refusal`);
      await assertUnchanged(d.store, before, where);
      assert.equal(await chains(), wakeBefore, where);
    }
    assert.equal(await d.store.getAccount('x'), null);
    assert.equal(await d.store.getAccount('y'), null);
    assert.equal(await d.store.getRecord('web_password', 'y'), null, 'no password was stored for the refused person');
    // The local operator's credential still works: nothing took it away.
    assert.ok((await d.operator.admin.accountList()).accounts.some((a) => a.id === 'operator' && a.permissions.operator));
  });

  it('every operator route is classified: the browser reaches only the allow-list, and none of it yields an operator credential', async () => {
    // Each route of the registry with a harmless request (the escalating ones are refused above). A
    // route added later fails here until someone decides what the browser may do with it. Each
    // answers 200, or unknown_route when it is not on the browser's allow-list.
    const harmless: Record<string, unknown> = {
      '/admin/account/add': { id: 'agent-a' },
      '/admin/account/rotate': { id: 'agent-a' },
      '/admin/account/remove': { id: 'agent-a' },
      '/admin/account/list': {},
      '/admin/room/add': { name: 'ops' },
      '/admin/room/set': { name: 'ops', open: true },
      '/admin/room/list': {},
      '/admin/room/member/add': { room: 'ops', account: 'codex' },
      '/admin/room/member/remove': { room: 'ops', account: 'codex' },
      '/admin/room/remove': { name: 'ops' },
      '/admin/listener': { account: 'codex', url: 'http://127.0.0.1:9/ring' },
      '/admin/listener/remove': { account: 'codex' },
      '/admin/user/create': { id: 'person-b', password: PASSWORD },
      '/admin/user/passwd': { id: 'person-b', password: 'another password' },
      '/admin/user/revoke-sessions': { id: 'person-b' },
      // Teams: the operator page shows them (web.overview) and changes none.
      '/admin/team/create': { name: 'crew', members: ['codex'] },
      '/admin/team/member/add': { team: 'crew', account: 'codex' },
      '/admin/team/member/remove': { team: 'crew', account: 'codex' },
      '/admin/team/leader/add': { team: 'crew', account: 'codex' },
      '/admin/team/leader/remove': { team: 'crew', account: 'codex' },
      '/admin/team/grant': { team: 'crew', leader: 'codex', capability: 'team.manage_members' },
      '/admin/team/revoke': { team: 'crew', leader: 'codex', capability: 'team.manage_members' },
      '/admin/team/list': {},
      '/admin/team/show': { team: 'crew' },
      // A contact policy is set with the operator's credential on the machine, not in the browser.
      '/admin/account/policy': { account: 'codex', policy: 'block_all' },
      // Retention deletes mail: set and run with the operator's credential on the machine only.
      '/admin/retention/set': { account: 'codex', days: 1 },
      '/admin/retention/list': {},
      '/admin/retention/run': {},
    };
    const unclassified = ADMIN_PATHS.filter((p) => p !== '/admin/daemon/stop' && !(p in harmless));
    assert.deepEqual(unclassified, [], 'every operator route is classified for the browser door');
    const existing = new Set(ADMIN_PATHS);
    for (const [path, body] of Object.entries(harmless)) {
      if (!existing.has(path)) continue;
      const before = await storeSnapshot(d.store);
      const r = await call(d.url, olga, path.slice(1), body);
      if (r.status !== 200) {
        assert.equal(assertEnvelope(bare(r), path), 'unknown_route', `${path}: ${JSON.stringify(r.json)}`);
        await assertUnchanged(d.store, before, path);
        continue;
      }
      const acc = r.json?.account;
      if (acc) assert.equal(acc.permissions.operator, false, `${path}: the account it shows has no operator permission`);
    }
    // Wake chains and the daemon's stop are never routes here,
    // nor is any permission change (there is none in the registry at all).
    const invented = ['admin/account/update', 'admin/account/permissions', 'admin/account/grant', 'admin/user/operator', 'admin/daemon/stop', 'admin//admin/wake/set'];
    for (const name of [...WAKE_PATHS.map((p) => p.slice(1)), ...invented]) {
      const before = await storeSnapshot(d.store);
      const wakeBefore = await chains();
      const r = await call(d.url, olga, name, name.includes('wake') ? COMMAND_CHAIN('codex') : { id: 'codex', permissions: { operator: true }, operator: true });
      assert.equal(assertEnvelope(bare(r), name), 'unknown_route', name);
      await assertUnchanged(d.store, before, name);
      assert.equal(await chains(), wakeBefore, name);
    }
    for (const a of await d.store.listAccounts()) if (a.permissions.operator) assert.ok(['operator', 'olga', 'oscar'].includes(a.id), `${a.id} became an operator`);
  });

  it('no secret the browser hands out can set a wake chain; the operator page shows what each account may do', async () => {
    const secrets: [string, string][] = [];
    const added = await call(d.url, olga, 'admin/account/add', { id: 'agent-c' });
    assert.deepEqual(added.json.account.permissions, { send: true, read: true, urgent: false, operator: false }, 'the answer shows the permissions');
    secrets.push(['account/add', added.json.secret]);
    const urgent = await call(d.url, olga, 'admin/account/add', { id: 'agent-d', permissions: { urgent: true, operator: false } });
    assert.equal(urgent.status, 200);
    secrets.push(['account/add urgent', urgent.json.secret]);
    assert.equal((await call(d.url, olga, 'admin/account/add', { id: 'agent-e' })).status, 200);
    for (const id of ['codex', 'pat', 'agent-e']) {
      const r = await call(d.url, olga, 'admin/account/rotate', { id });
      assert.equal(r.status, 200, id);
      assert.equal(r.json.account.permissions.operator, false, id);
      secrets.push([`rotate ${id}`, r.json.secret]);
    }
    // And whatever the escalating requests answer (a refusal carries no secret).
    for (const [name, body] of [
      ['admin/account/add', { id: 'agent-f', permissions: { operator: true } }],
      ['admin/account/rotate', { id: 'oscar' }],
    ] as const) {
      const r = await call(d.url, olga, name, body);
      if (typeof r.json?.secret === 'string') secrets.push([name, r.json.secret]);
    }
    const wakeBefore = await chains();
    for (const [how, secret] of secrets) {
      for (const account of ['codex', 'agent-c', 'operator']) {
        // From this machine (loopback), as a local process would: only the permission stops it.
        const r = await http(d.url, '/admin/wake/set', { token: secret, body: JSON.stringify(COMMAND_CHAIN(account)) });
        assert.equal(assertEnvelope(r, how), 'permission_denied', `${how} → wake set ${account}`);
        assert.equal(r.json.error.need, 'operator', how);
      }
    }
    assert.equal(await chains(), wakeBefore, 'no chain was set');
    // The request itself is valid: the local operator's token sets it.
    const ok = await http(d.url, '/admin/wake/set', { token: d.operatorToken, body: JSON.stringify({ account: 'agent-c', steps: [{ kind: 'hooks' }] }) });
    assert.equal(ok.status, 200, JSON.stringify(ok.json));
    await d.operator.admin.wakeClear('agent-c');

    const o = await call(d.url, olga, 'admin/overview');
    const perms = Object.fromEntries(o.json.accounts.map((a: { id: string; permissions: unknown }) => [a.id, a.permissions]));
    assert.deepEqual(perms['agent-c'], { send: true, read: true, urgent: false, operator: false });
    assert.deepEqual(perms['agent-d'], { send: true, read: true, urgent: true, operator: false });
    const js = await (await fetch(`${d.url}/web/assets/page-admin.js`)).text(); // the operator page's module
    assert.match(js, /'Permissions'/, "the operator page lists each account's permissions");
    assert.match(js, /permissions: ' \+ permText\(r\.account\.permissions\)/, 'and shows them for an account it just created');
    assert.doesNotMatch(js, /person-operator|operator: pop\.checked/, 'the page offers no operator checkbox');
  });
});
