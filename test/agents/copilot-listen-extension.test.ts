// GitHub Copilot CLI in listen mode with its extension: two waits of one session are parked when
// mail comes (the agentStop hook's `m4a hook copilot-stop`, listening, and the extension's `m4a hook
// copilot-live`), and the message reaches the model once. The real Copilot runs interactive in a tmux
// pane of the test's own tmux server, wired only by `m4a setup copilot`, its model a scripted
// chat-completions server on loopback (as in copilot-idle-wake.test.ts).
//
// Checked: the stop hook's reason is the one prompt naming the mail; in the seconds after it (longer
// than a listening hook's budget here, so a second prompt queued behind it would run) no other
// model request comes.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../support/until.js';
import { copilotInTmux, hasTmux } from './support/copilot-tmux.js';
import { hookProcesses } from './support/stop-hooks.js';
import { userTexts } from './support/scripted-chat.js';

const FLOW_MS = 60_000;
const LISTEN_SECS = 6;

it("listen mode and the extension: mail that wakes both parked waits reaches the model once, as the agentStop hook's reason", { timeout: 240_000 }, async (t) => {
  if (!hasTmux()) return t.skip('tmux is not installed: the interactive Copilot needs a terminal');
  const { w, codex, model, screen } = await copilotInTmux(t, {
    prefix: 'm4a-copilot-listen-',
    script: [
      { tool: 'bash', input: { command: 'm4a listen on', description: 'Turn mail listen mode on' } },
      { text: 'Listening for mail.' }, // ends the turn: the agentStop hook listens, the extension's live wait too
      { text: 'Noted the mail from codex.' }, // the one woken turn; then the hook listens again
    ],
    prompt: 'Turn listen mode on and wait for mail.',
    // A listening hook gives up soon: a second delivery queued behind it would then run (and be seen).
    env: { M4A_LISTEN_SECS: String(LISTEN_SECS) },
  });

  await until('the first turn answered', () => (model.remaining() === 1 && screen().includes('Listening for mail.') ? true : undefined), FLOW_MS, 250);
  // Both waits parked for a second (so the mail must wake them, not be found by a first look).
  let seenAt = 0;
  await until(
    'the agentStop hook and the live wait parked',
    () => {
      if (hookProcesses(w.dataDir, 'copilot-stop').length === 0 || hookProcesses(w.dataDir, 'copilot-live').length === 0) return void (seenAt = 0);
      if (seenAt === 0) return void (seenAt = Date.now());
      return Date.now() - seenAt >= 1_000 ? true : undefined;
    },
    30_000,
    100,
  );
  const res = await fetch(`${w.url}/mail/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${codex.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to: 'copilot', subject: 'one message', body: 'x' }),
  });
  const sent = (await res.json()) as any;
  assert.equal(res.status, 200, JSON.stringify(sent));
  await until('the woken turn done', () => (model.remaining() === 0 && screen().includes('Noted the mail from codex.') ? true : undefined), FLOW_MS, 100).catch((err: Error) =>
    assert.fail(`${err.message}\nscreen:\n${screen()}`),
  );
  // Longer than the listening hook's budget: a second delivery queued behind it has run by now.
  await new Promise((r) => setTimeout(r, (LISTEN_SECS + 6) * 1000));
  const naming = model.requests.filter((q) => userTexts(q.body).some((u) => u.includes(sent.message_id)));
  const prompts = naming.map((q) => userTexts(q.body).filter((u) => u.includes(sent.message_id)).length);
  assert.deepEqual(model.problems, [], `no request after the one woken turn:\n${screen()}`);
  assert.equal(naming.length, 1, 'one model request names the mail');
  assert.deepEqual(prompts, [1], 'and in one prompt');
  const prompt = userTexts(naming[0]!.body).find((u) => u.includes(sent.message_id)) ?? '';
  assert.ok(prompt.includes('You have new mail in mail4agent'), `the prompt is the wake text: ${prompt}`);
});
