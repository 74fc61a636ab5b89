// opencode on the mailbox with the real program: opencode 1.18.33 (a compiled Bun binary), wired by
// `m4a setup opencode` over the user's own opencode.json, the real daemon; only the model is a
// scripted chat-completions server on loopback. Runs in the loopback-only namespace.
//   1. `opencode run`: the session calls whoami and send through the entry setup wrote, is attested
//      as provider opencode to its own process with the session id its plugin reports, and mail
//      that arrives while its turn runs continues it (the 📬 message after the turn, the inbox read).
//   2. `opencode serve`: an idle session, nobody typing, is started by mail (the plugin's
//      promptAsync); send commit → the model request, printed.
//   3. The delivery-chain step opencode=URL (no plugin, the server's password set, read from a file): the idle
//      session gets the wake text through prompt_async; send commit → the model request, printed.
//   4. A busy session (its bash tool running) gets the mail after the tool's result, in the same run.
//   5. `m4a setup opencode --project`: a run in the project starts without the 76 s wait on opencode's
//      @opencode-ai/plugin install (both config folders guarded).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MailClient } from '../../src/client/http-client.js';
import { operatorToken } from '../../src/cli/daemon-target.js';
import { until } from '../support/until.js';
import { contentText, userTexts } from './support/scripted-chat.js';
import { OPENCODE_EXE, opencodeWorld, serve, sleep, tool } from './support/opencode-serve.js';
import { describeRun } from './support/world.js';

const MAIL = '📬 You have new mail in mail4agent:';
const toolOutput = (body: any, callId: string): string =>
  (body?.messages as any[] | undefined)?.filter((m) => m?.role === 'tool' && m.tool_call_id === callId).map((m) => contentText(m.content))[0] ?? '';
const cardOf = async (c: { tester: { directory(o: object): Promise<any> } }, account: string): Promise<any[]> =>
  ((await c.tester.directory({ detail: true, include_ended: true })).accounts.find((a: any) => a.id === account)?.sessions ?? []) as any[];

describe('opencode on the mailbox, live', () => {
  it('opencode run: whoami and send through the entry setup wrote, attested to opencode; mail during the turn continues it', { timeout: 180_000 }, async (t) => {
    let releaseTurn: () => void = () => {};
    const held = new Promise<void>((r) => (releaseTurn = r));
    const c = await opencodeWorld(t, 'm4a-opencode-run-', [
      { tool: tool('m4a_mail_whoami'), input: {} },
      { tool: tool('m4a_mail_send'), input: { to: 'tester', subject: 'hello from opencode', body: 'I am wired.' } },
      { text: 'Sent.', gate: held },
      { tool: tool('m4a_mail_inbox'), input: {} },
      { text: 'Read the mail.' },
    ]);
    const { w, tester, model } = c;
    // Setup kept the user's provider and model and added its entry, plugin and install guard.
    const cfg = JSON.parse(readFileSync(join(w.home, '.config', 'opencode', 'opencode.json'), 'utf8'));
    assert.equal(cfg.model, 'fake/scripted');
    assert.equal(cfg.mcp.m4a.type, 'local');
    assert.ok(existsSync(join(w.home, '.config', 'opencode', 'plugin', 'mail4agent.js')));

    const run = w.run(OPENCODE_EXE, ['run', 'Say who you are on the mailbox and greet tester.'], { cwd: w.project, timeoutMs: 150_000 });
    // While the model's third answer is held (the turn runs), mail comes for opencode.
    await until('the turn to reach its held answer', () => model.requests.some((r) => r.turn === 2), 90_000, 50);
    const sent = await tester.send({ to: 'opencode', subject: 'the deploy window', body: 'Deploy after 18:00.' });
    await sleep(1_500);
    releaseTurn();
    const r = await run;
    assert.ok(r.code === 0 && !r.timedOut, describeRun(r));
    assert.deepEqual(model.problems, []);
    assert.equal(model.remaining(), 0, `the script ran out early or not at all:\n${describeRun(r)}`);

    const [who, send, inbox] = model.exchanges();
    const me = JSON.parse(who!.output!.slice(who!.output!.indexOf('{')));
    assert.equal(me.account, 'opencode', who!.output!);
    assert.match(send!.output!, /"message_id"/, send!.output!);
    // Attested to the opencode process itself, provider opencode, with the session id its plugin named.
    const cards = await cardOf(c, 'opencode');
    const card = cards.find((s) => s.card?.attested?.pid === r.pid)?.card;
    assert.ok(card, `no opencode session attested to pid ${r.pid}: ${JSON.stringify(cards.map((s) => s.card))}`);
    assert.equal(card.attested.exe, realpathSync(OPENCODE_EXE));
    assert.equal(card.corroborated.provider, 'opencode');
    assert.match(String(card.corroborated.provider_session_id), /^ses_[A-Za-z0-9]+$/, JSON.stringify(card));
    const got = (await tester.inbox({ include_bodies: true })).messages.find((m) => m.subject === 'hello from opencode');
    assert.ok(got, 'tester got the mail opencode sent');
    assert.ok(got.from.startsWith('opencode/'), got.from);
    // The mail that came during the turn: a 📬 user message after it, and the inbox read.
    const wake = model.requests.find((q) => q.turn === 3)!;
    const mailTurn = userTexts(wake.body).find((u) => u.startsWith(MAIL));
    assert.ok(mailTurn?.includes(sent.message_id), `the model saw no 📬 turn naming ${sent.message_id}: ${JSON.stringify(userTexts(wake.body))}`);
    assert.match(toolOutput(model.requests.find((q) => q.turn === 4)?.body, inbox!.callId), /the deploy window/);
    const receipt = (await tester.receipts(sent.message_id)).receipts[0]!;
    assert.ok(receipt.surfaced_at, 'the inbox read surfaced the mail');
    process.stdout.write(`# opencode run with the plugin: ${r.ms} ms from start to exit (five model requests, one mail during the turn)\n`);
  });

  it('opencode serve: an idle session, nobody typing, is started by mail through the plugin', { timeout: 180_000 }, async (t) => {
    const c = await opencodeWorld(t, 'm4a-opencode-idle-', [{ text: 'Ready.' }, { tool: tool('m4a_mail_inbox'), input: {} }, { text: 'Handled the mail.' }]);
    const { w, tester, model } = c;
    const s = await serve(c, w.project);
    const created = await s.api('POST', '/session', {});
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id = String(created.body.id);
    assert.equal((await s.api('POST', `/session/${id}/prompt_async`, { parts: [{ type: 'text', text: 'Wait for mail.' }] })).status, 204);
    await until(
      'the first turn to end',
      async () => model.requests.some((r) => r.turn === 0) && JSON.stringify((await s.api('GET', '/session/status')).body) === '{}',
      60_000,
      100,
    );
    // The plugin has named this session to the daemon (its card carries the id) before any mail.
    await until('the card to carry the session id', async () => (await cardOf(c, 'opencode')).some((x) => x.card?.corroborated?.provider_session_id === id), 30_000, 100);
    await sleep(1_000);
    const before = model.requests.length;
    const sent = await tester.send({ to: 'opencode', subject: 'review the patch', body: 'Please review m4a#22.' });
    const committed = Date.now();
    const woke = await until('the mail to start a turn', () => model.requests.slice(before).find((r) => r.turn === 1), 60_000, 20);
    const mailTurn = userTexts(woke.body).find((u) => u.startsWith(MAIL));
    assert.ok(mailTurn?.includes(sent.message_id), JSON.stringify(userTexts(woke.body)));
    await until('the inbox read to come back', () => model.requests.find((r) => r.turn === 2), 60_000, 50);
    assert.match(toolOutput(model.requests.find((r) => r.turn === 2)!.body, 'call_scripted_1'), /review the patch/);
    assert.deepEqual(model.problems, []);
    const card = (await cardOf(c, 'opencode')).find((x) => x.card?.corroborated?.provider_session_id === id)!.card;
    assert.equal(card.attested.pid, s.pid, 'the serve process is the session');
    process.stdout.write(`# opencode plugin (idle, serve): send commit → model request ${woke.at - committed} ms\n`);
  });

  it('the chain step opencode=URL wakes an idle session through prompt_async, with the server password read from a file', { timeout: 180_000 }, async (t) => {
    const password = `pw-${Math.random().toString(36).slice(2)}`;
    const c = await opencodeWorld(t, 'm4a-opencode-chain-', [{ text: 'Ready.' }, { tool: tool('m4a_mail_inbox'), input: {} }, { text: 'Handled.' }], ['--no-hooks']);
    const { w, tester, model } = c;
    assert.ok(!existsSync(join(w.home, '.config', 'opencode', 'plugin')), '--no-hooks: no plugin');
    // The password is in the user's own file; the chain names the file, never the value.
    const pwFile = join(w.root, 'opencode-password');
    writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
    const s = await serve(c, w.project, {}, password);
    const created = await s.api('POST', '/session', {});
    const id = String(created.body.id);
    assert.equal((await s.api('POST', `/session/${id}/prompt_async`, { parts: [{ type: 'text', text: 'Wait for mail.' }] })).status, 204);
    await until(
      'the first turn to end',
      async () => model.requests.some((r) => r.turn === 0) && JSON.stringify((await s.api('GET', '/session/status')).body) === '{}',
      60_000,
      100,
    );
    // The MCP bridge has met the daemon: opencode's session is on record (no id reported: no plugin).
    await until('opencode on record', async () => (await cardOf(c, 'opencode')).some((x) => x.live), 30_000, 100);
    const set = JSON.parse(await w.m4a(['wake', 'set', 'opencode', '--step', `opencode=${s.url}`, '--password-file', pwFile, '--json']));
    assert.deepEqual(set.chain.steps, [{ kind: 'opencode', url: s.url, password_file: pwFile }]);
    assert.ok(!JSON.stringify(set).includes(password));
    const before = model.requests.length;
    const sent = await tester.send({ to: 'opencode', subject: 'chain mail', body: 'Through the chain.' });
    const committed = Date.now();
    const receipt = await until(
      'the chain attempt on the receipt',
      async () => (await tester.receipts(sent.message_id)).receipts[0]?.signalled.find((x) => x.adapter === 'opencode'),
      30_000,
      50,
    ).catch(async (err: unknown) => assert.fail(`${String(err)}: ${JSON.stringify(await tester.receipts(sent.message_id))}`));
    assert.equal(receipt.ok, true, receipt.detail);
    // The sender sees that it was signalled; the operator also sees how.
    const operator = new MailClient({ url: w.url, token: operatorToken(w.dataDir) });
    c.later(() => operator.close());
    const how = (await operator.receipts(sent.message_id)).receipts[0]!.signalled.find((x) => x.adapter === 'opencode')!;
    assert.match(how.detail, new RegExp(`prompt_async accepted by opencode at .* for ${id} \\(idle: a turn starts\\)`));
    const woke = await until('the chain to start a turn', () => model.requests.slice(before).find((r) => r.turn === 1), 60_000, 20);
    assert.ok(
      userTexts(woke.body).some((u) => u.startsWith('You have new mail in mail4agent:') && u.includes(sent.message_id)),
      JSON.stringify(userTexts(woke.body)),
    );
    await until('the inbox read', () => model.requests.find((r) => r.turn === 2), 60_000, 50);
    assert.match(toolOutput(model.requests.find((r) => r.turn === 2)!.body, 'call_scripted_1'), /chain mail/);
    process.stdout.write(`# opencode chain step (idle, serve, password): send commit → model request ${woke.at - committed} ms\n`);
  });

  it("a busy session gets the mail after its running tool's result, in the same run", { timeout: 180_000 }, async (t) => {
    const c = await opencodeWorld(t, 'm4a-opencode-busy-', [
      { tool: 'bash', input: { command: 'sleep 4; echo slept', description: 'Wait four seconds' } },
      { tool: tool('m4a_mail_inbox'), input: {} },
      { text: 'Read it.' },
    ]);
    const { w, tester, model } = c;
    const run = w.run(OPENCODE_EXE, ['run', 'Wait a little.'], { cwd: w.project, timeoutMs: 150_000 });
    // The bash call has gone out: the tool runs for 4 s, and the mail comes meanwhile.
    await until('the bash call', () => model.requests.some((r) => r.turn === 0), 90_000, 20);
    await sleep(500);
    const sent = await tester.send({ to: 'opencode', subject: 'mid-tool mail', body: 'Sent while bash ran.' });
    const committed = Date.now();
    const r = await run;
    assert.ok(r.code === 0 && !r.timedOut, describeRun(r));
    assert.deepEqual(model.problems, []);
    const next = model.requests.find((q) => q.turn === 1)!;
    const msgs = next.body.messages as any[];
    const toolAt = msgs.findIndex((m) => m.role === 'tool' && m.tool_call_id === 'call_scripted_0');
    const mailAt = msgs.findIndex((m) => m.role === 'user' && contentText(m.content).startsWith(MAIL) && contentText(m.content).includes(sent.message_id));
    assert.ok(toolAt >= 0 && /slept/.test(contentText(msgs[toolAt].content)), `the tool result: ${JSON.stringify(msgs.slice(-3))}`);
    assert.ok(mailAt > toolAt, `the 📬 turn comes after the tool's result: ${JSON.stringify(msgs.map((m) => m.role))}`);
    assert.match(toolOutput(model.requests.find((q) => q.turn === 2)?.body, 'call_scripted_1'), /mid-tool mail/);
    process.stdout.write(`# opencode plugin (busy, run): send commit → the model request after the tool ${next.at - committed} ms (the tool had ~3.5 s left)\n`);
  });

  it('--project: the plugin in DIR/.opencode; opencode run there starts without waiting on a package install', { timeout: 180_000 }, async (t) => {
    const c = await opencodeWorld(t, 'm4a-opencode-project-', [{ tool: tool('m4a_mail_whoami'), input: {} }, { text: 'Done.' }], ['--no-hooks']);
    const { w, model } = c;
    await w.m4a(['setup', 'opencode', '--project', w.project]);
    assert.ok(existsSync(join(w.project, '.opencode', 'plugin', 'mail4agent.js')));
    const r = await w.run(OPENCODE_EXE, ['run', 'Who am I?'], { cwd: w.project, timeoutMs: 150_000 });
    assert.ok(r.code === 0 && !r.timedOut, describeRun(r));
    assert.equal(model.remaining(), 0, describeRun(r));
    assert.match(model.exchanges()[0]!.output ?? '', /"account": ?"opencode"/);
    // Without the guard in both config folders this run waited 76 s offline.
    assert.ok(r.ms < 40_000, `opencode run took ${r.ms} ms: it waited on the @opencode-ai/plugin install`);
    process.stdout.write(`# opencode run with a project plugin: ${r.ms} ms from start to exit (unguarded: 76 s)\n`);
  });
});
