// Mixed: a Gemini CLI session and an opencode session answer each other's mail with no person
// involved. Both wired only by `m4a setup gemini` and `m4a setup opencode` (plus the user's own
// settings: Gemini's auth choice, opencode's model); the models are scripted servers on loopback.
//   Gemini (`gemini -p --yolo`, listen mode) asks opencode a question and listens; the idle opencode
//   session (`opencode serve`) is started by that mail through its plugin, reads it and answers
//   with a question of its own; Gemini's listening AfterAgent hook wakes it with the answer, it
//   replies; opencode, idle again, is started again and reads the reply. Nobody types after the
//   two sessions start. Printed: send commit → the recipient's model request, per leg.
import { it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MailClient } from '../../src/client/http-client.js';
import { operatorToken } from '../../src/cli/daemon-target.js';
import { until } from '../support/until.js';
import { contentText, startScriptedChat, userTexts } from './support/scripted-chat.js';
import { geminiTool, geminiUserTexts, startScriptedGemini } from './support/scripted-gemini.js';
import { OPENCODE_ENV, serve, tool, writeOpencodeConfig, type Ctx } from './support/opencode-serve.js';
import { describeRun, makeWorld } from './support/world.js';

const RUN_MS = 200_000;
const MODEL = 'gemini-2.5-flash';
const Q1 = 'which port does the staging proxy use';
const A1 = 'It listens on 8443. Which region do you deploy to?';
const A2 = 'eu-west-1, after 18:00.';
const MAIL = '📬 You have new mail in mail4agent:';

const toolOutput = (body: any, callId: string): string =>
  (body?.messages as any[] | undefined)?.filter((m) => m?.role === 'tool' && m.tool_call_id === callId).map((m) => contentText(m.content))[0] ?? '';
const idIn = (text: string, what: string): string => {
  const m = /\bm-[0-9a-z]{8,}\b/.exec(text);
  assert.ok(m, `${what}: no message id in ${text}`);
  return m[0];
};

it('Gemini CLI and opencode answer each other by mail, nobody typing', { timeout: 300_000 }, async (t: TestContext) => {
  const w = await makeWorld('m4a-mixed-gemini-opencode-');
  Object.assign(w.env, OPENCODE_ENV);
  const undo: (() => unknown)[] = [];
  t.after(async () => {
    for (const f of undo.reverse())
      await Promise.resolve()
        .then(f)
        .catch(() => undefined);
    await w.close();
  });
  const c: Ctx = { w, tester: null as never, model: null as never, later: (f) => void undo.push(f) };

  // opencode: the user's model, then setup; an idle session in `opencode serve`.
  const oc = await startScriptedChat(
    [
      { text: 'Ready for mail.' },
      { tool: tool('m4a_mail_inbox'), input: {} }, // started by Gemini's question
      {
        tool: tool('m4a_mail_reply'),
        input: (body) => {
          const msg = (JSON.parse(toolOutput(body, 'call_scripted_1').replace(/^[^{]*/, '')).messages as any[]).find((m) => m.subject === Q1);
          return { message_id: String(msg?.message_id), body: A1 };
        },
      },
      { text: 'Answered gemini.' },
      { tool: tool('m4a_mail_inbox'), input: {} }, // started by Gemini's reply
      { text: 'Gemini deploys to eu-west-1 after 18:00.' },
    ],
    { filler: 'Mail session' },
  );
  undo.push(() => oc.close());
  writeOpencodeConfig(w, oc.url);
  await w.m4a(['setup', 'opencode']);
  // Gemini: the user's auth choice and quiet switches, then setup.
  mkdirSync(join(w.home, '.gemini'), { recursive: true });
  writeFileSync(
    join(w.home, '.gemini', 'settings.json'),
    '{\n  "security": { "auth": { "selectedType": "gemini-api-key" } },\n  "privacy": { "usageStatisticsEnabled": false },\n  "general": { "enableAutoUpdate": false, "enableAutoUpdateNotification": false }\n}\n',
  );
  await w.m4a(['setup', 'gemini']);
  const operator = new MailClient({ url: w.url, token: operatorToken(w.dataDir) });
  undo.push(() => operator.close());

  const s = await serve(c, w.project);
  const id = String((await s.api('POST', '/session', {})).body.id);
  assert.equal((await s.api('POST', `/session/${id}/prompt_async`, { parts: [{ type: 'text', text: 'Handle your mail.' }] })).status, 204);
  await until(
    'opencode idle after its first turn',
    async () => oc.requests.some((r) => r.turn === 0) && JSON.stringify((await s.api('GET', '/session/status')).body) === '{}',
    60_000,
    100,
  );
  await until('the plugin to name the session', async () => JSON.stringify(await operator.directory({ detail: true })).includes(id), 30_000, 100);

  const shell = (command: string) => ({ tool: 'run_shell_command', input: { command, description: command } });
  const gem = await startScriptedGemini([
    shell('m4a listen on'),
    { tool: geminiTool('m4a_mail_send'), input: { to: 'opencode', subject: Q1, body: 'I need the staging proxy port for the deploy script.' } },
    { text: 'Asked opencode; listening.' }, // AfterAgent listens
    { tool: geminiTool('m4a_mail_inbox'), input: {} }, // after the reason: opencode's answer
    { tool: geminiTool('m4a_mail_reply'), input: (body) => ({ message_id: idIn(geminiUserTexts(body).join('\n'), "AfterAgent's reason"), body: A2 }) },
    shell('m4a listen off'),
    { text: 'Done.' },
  ]);
  undo.push(() => gem.close());
  const r = await w.run('gemini', ['-p', 'Ask opencode for the staging proxy port and answer what it asks.', '-m', MODEL, '--yolo'], {
    env: { GEMINI_API_KEY: 'test-key', GOOGLE_GEMINI_BASE_URL: gem.url, GEMINI_CLI_TRUST_WORKSPACE: 'true', M4A_LISTEN_SECS: '120' },
    timeoutMs: RUN_MS,
  });
  assert.ok(r.code === 0 && !r.timedOut, `gemini -p did not succeed:\n${describeRun(r)}\n--- opencode serve ---\n${s.output()}`);
  assert.deepEqual(gem.problems, [], `offered: ${gem.toolNames().join(', ')}`);
  assert.equal(gem.remaining(), 0, describeRun(r));
  await until("opencode to read Gemini's reply", () => oc.requests.find((q) => q.turn === 5), 60_000, 50);
  assert.deepEqual(oc.problems, []);

  // Leg 1: Gemini's question started the idle opencode session (a 📬 user turn naming it).
  const [, send, inbox, reply] = gem.exchanges();
  const q1 = JSON.parse(send!.output!.slice(send!.output!.indexOf('{'), send!.output!.lastIndexOf('}') + 1));
  const woke1 = oc.requests.find((q) => q.turn === 1)!;
  assert.ok(
    userTexts(woke1.body).some((u) => u.startsWith(MAIL) && u.includes(q1.message_id)),
    JSON.stringify(userTexts(woke1.body)),
  );
  // Leg 2: opencode's answer woke Gemini's listening AfterAgent; Gemini read it.
  const a1 = JSON.parse(toolOutput(oc.requests.find((q) => q.turn === 3)!.body, 'call_scripted_2').replace(/^[^{]*/, ''));
  const reasonReq = gem.requests.find((q) => q.turn === 3)!;
  assert.ok(geminiUserTexts(reasonReq.body).at(-1)?.includes(a1.message_id), `AfterAgent's reason names opencode's answer: ${geminiUserTexts(reasonReq.body).at(-1)}`);
  assert.ok(inbox!.output?.includes('8443'), `Gemini read the answer: ${inbox!.output}`);
  // Leg 3: Gemini's reply started opencode again; it read it.
  const a2 = JSON.parse(reply!.output!.slice(reply!.output!.indexOf('{'), reply!.output!.lastIndexOf('}') + 1));
  const woke2 = oc.requests.find((q) => q.turn === 4)!;
  assert.ok(
    userTexts(woke2.body).some((u) => u.startsWith(MAIL) && u.includes(a2.message_id)),
    JSON.stringify(userTexts(woke2.body)),
  );
  assert.match(toolOutput(oc.requests.find((q) => q.turn === 5)!.body, 'call_scripted_4'), /eu-west-1/);

  const stored = async (mid: string): Promise<number> => Date.parse((await operator.receipts(mid)).receipts[0]!.stored_at);
  const legs = {
    'gemini → opencode (plugin, idle)': woke1.at - (await stored(q1.message_id)),
    'opencode → gemini (listening AfterAgent)': reasonReq.at - (await stored(a1.message_id)),
    'gemini → opencode again (plugin, idle)': woke2.at - (await stored(a2.message_id)),
  };
  for (const [k, v] of Object.entries(legs)) assert.ok(v >= 0 && v < RUN_MS, `${k}: ${v} ms`);
  console.log(
    `mixed: send commit → recipient model request: ${Object.entries(legs)
      .map(([k, v]) => `${k} ${v} ms`)
      .join('; ')} (gemini -p ran ${r.ms} ms)`,
  );
});
