// Mail to an idle GitHub Copilot CLI session starts a turn with nobody typing. The real Copilot runs
// interactive (its terminal UI, in a tmux pane of the test's own tmux server), wired only by `m4a
// setup copilot` — its MCP entry, hooks and the extension that wakes it — plus the BYOK variables,
// `--experimental` (extensions are experimental) and COPILOT_ALLOW_ALL=true (tools allowed and the
// folder trusted without the dialog). Its model is a scripted chat-completions server on loopback.
//
// The session answers a first prompt and goes idle; its extension has parked `m4a hook copilot-live`
// in the daemon (a live wait, speaking as the Copilot session). Then codex sends mail: the daemon
// answers the parked wait, the extension sends the wake text as a new prompt, the model reads its
// inbox. Checked: the receipts, and the figure send commit → the model request carrying the text.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { until } from '../support/until.js';
import { copilotInTmux, hasTmux } from './support/copilot-tmux.js';
import { hookProcesses } from './support/stop-hooks.js';
import { userTexts } from './support/scripted-chat.js';
import { processTree } from './support/world.js';

const FLOW_MS = 60_000;

it('mail to an idle interactive Copilot session starts a turn through its extension; the model reads the mail', { timeout: 240_000 }, async (t) => {
  if (!hasTmux()) return t.skip('tmux is not installed: the interactive Copilot needs a terminal');
  const { w, codex, model, tm, screen } = await copilotInTmux(t, {
    prefix: 'm4a-copilot-idle-',
    script: [
      { text: 'Ready for mail.' }, // the first prompt; then the session is idle
      { tool: (names) => names.find((n) => n === 'm4a-m4a_mail_inbox'), input: {} }, // the woken turn
      { text: 'Read the mail from codex.' },
    ],
    prompt: 'Hello; wait for mail.',
  });
  const panePid = Number(tm(['display', '-p', '#{pane_pid}']).trim());

  await until('the first turn answered', () => (model.remaining() === 2 && screen().includes('Ready for mail.') ? true : undefined), FLOW_MS, 250);
  // The session is on record with Copilot's own session id once its bridge has spoken to the daemon.
  const session = await until(
    'the copilot session on record',
    async () => {
      const res = await fetch(`${w.url}/mail/directory`, {
        method: 'POST',
        headers: { authorization: `Bearer ${codex.secret}`, 'content-type': 'application/json' },
        body: '{"detail":true}',
      });
      const peers = (await res.json()) as any;
      return (peers.accounts as any[]).find((a) => a.id === 'copilot')?.sessions?.find((s: any) => s.live && s.card?.corroborated?.provider_session_id);
    },
    30_000,
    250,
  );
  // The extension's live wait, parked for a second (so the mail must wake it, not be found by its first look).
  let seenAt = 0;
  await until(
    'the live wait parked',
    () => {
      if (hookProcesses(w.dataDir, 'copilot-live').length === 0) return void (seenAt = 0);
      if (seenAt === 0) return void (seenAt = Date.now());
      return Date.now() - seenAt >= 1_000 ? true : undefined;
    },
    30_000,
    100,
  );
  const tree = processTree(panePid);
  const attested = tree.find((p) => p.pid === session.card.attested.pid);
  assert.ok(attested && /@github\/copilot-linux-x64\/copilot$/.test(attested.exe), `the session is the copilot process in the pane: ${JSON.stringify(session.card.attested)}`);
  assert.equal(session.card.corroborated.provider, 'copilot');

  // The operator's chain: the hooks (so the receipts say how the mail reached it).
  await w.m4a(['wake', 'set', 'copilot', '--step', 'hooks', '--json']);
  const requestsBefore = model.requests.length;

  const res = await fetch(`${w.url}/mail/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${codex.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to: 'copilot', subject: 'deploy window', body: 'The deploy window opens at 14:00; confirm you are ready.' }),
  });
  const sent = (await res.json()) as any;
  assert.equal(res.status, 200, JSON.stringify(sent));
  /** As the sender sees them, or (`asRecipient`) with each step's detail. */
  const receipts = async (asRecipient = false): Promise<any> => {
    const secret = asRecipient ? JSON.parse(readFileSync(join(w.home, '.config', 'mail4agent', 'credentials.json'), 'utf8')).accounts.copilot.secret : codex.secret;
    const r = await fetch(`${w.url}/mail/receipts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message_id: sent.message_id }),
    });
    return r.json();
  };
  await until('the woken turn done', async () => (model.remaining() === 0 && screen().includes('Read the mail from codex.') ? true : undefined), FLOW_MS, 100).catch(
    async (err: Error) => {
      assert.fail(`${err.message}\nreceipts: ${JSON.stringify(await receipts(true))}\nscreen:\n${screen()}`);
    },
  );
  assert.deepEqual(model.problems, [], `offered: ${model.toolNames().join(', ')}`);

  const woken = model.requests.find((q) => q.turn === 1)!;
  assert.ok(model.requests.indexOf(woken) >= requestsBefore, 'the woken turn came after the mail');
  const prompt = userTexts(woken.body).at(-1) ?? '';
  assert.ok(prompt.includes('You have new mail in mail4agent') && prompt.includes(sent.message_id), `the woken turn's prompt is the wake text naming the mail: ${prompt}`);
  assert.ok(!prompt.includes('14:00'), 'the wake text carries no body');
  const inbox = model.exchanges()[0];
  assert.ok(inbox?.output?.includes('The deploy window opens at 14:00'), `the model read the mail: ${inbox?.output}`);

  const rc = await receipts();
  t.diagnostic(`receipts: ${JSON.stringify(rc)}`);
  const to = rc.receipts[0];
  assert.deepEqual(
    to.signalled.map((s: any) => [s.adapter, s.ok]),
    [['wait', true]],
    'the parked live wait answered',
  );
  const detail = (await receipts(true)).receipts[0].signalled[0].detail;
  assert.ok(detail.endsWith(session.address), `the wait answered is the session's own (the extension's m4a speaks as the copilot process): ${detail}`);
  assert.ok(to.surfaced_at !== null, 'the mail surfaced to the Copilot session');
  const figure = woken.at - Date.parse(to.stored_at);
  assert.ok(figure >= 0 && figure < FLOW_MS, `send commit → model request: ${figure} ms`);
  console.log(
    `copilot idle wake (extension's live wait): send commit → wait answered ${Date.parse(to.signalled[0].at) - Date.parse(to.stored_at)} ms, → Copilot's model request carrying the wake text ${figure} ms`,
  );
});
