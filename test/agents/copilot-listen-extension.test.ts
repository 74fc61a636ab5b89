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
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startScriptedChat, userTexts } from './support/scripted-chat.js';
import { AGENT_MODULES, makeWorld, NODE_BIN } from './support/world.js';

const PKG_CACHE = join(AGENT_MODULES, '.cache', 'copilot-pkg');
const FLOW_MS = 60_000;
const LISTEN_SECS = 6;

/** The `m4a hook <name>` processes of one world (found by its data directory). */
function hooks(dataDir: string, hook: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').includes(`hook ${hook}`)) continue;
      if (readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').includes(`M4A_DATA_DIR=${dataDir}`)) out.push(Number(name));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

async function until<T>(what: string, ms: number, probe: () => T | undefined | Promise<T | undefined>, every = 100): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

it("listen mode and the extension: mail that wakes both parked waits reaches the model once, as the agentStop hook's reason", { timeout: 240_000 }, async (t) => {
  if (spawnSync('tmux', ['-V']).status !== 0) return t.skip('tmux is not installed: the interactive Copilot needs a terminal');
  const w = await makeWorld('m4a-copilot-listen-');
  const tmux = `m4a-copilot-${process.pid}-${w.port}`;
  /** tmux on the test's own server (-L), with the world's environment. */
  const tm = (args: string[], env: NodeJS.ProcessEnv = w.env): string => {
    const r = spawnSync('tmux', ['-L', tmux, ...args], { env, encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 0, `tmux ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  t.after(async () => {
    spawnSync('tmux', ['-L', tmux, 'kill-server'], { timeout: 10_000 });
    await w.close();
  });
  const setup = await w.m4a(['setup', 'copilot']);
  assert.match(setup, /extension\.mjs brings mail to an idle session/, setup);
  const codex = JSON.parse(await w.m4a(['admin', 'account', 'add', 'codex', '--json']));
  const model = await startScriptedChat([
    { tool: 'bash', input: { command: 'm4a listen on', description: 'Turn mail listen mode on' } },
    { text: 'Listening for mail.' }, // ends the turn: the agentStop hook listens, the extension's live wait too
    { text: 'Noted the mail from codex.' }, // the one woken turn; then the hook listens again
  ]);
  t.after(() => model.close());

  const env: NodeJS.ProcessEnv = {
    COPILOT_OFFLINE: 'true',
    COPILOT_PROVIDER_BASE_URL: `${model.url}/v1`,
    COPILOT_PROVIDER_API_KEY: 'test-key',
    COPILOT_MODEL: 'scripted',
    COPILOT_PROVIDER_MAX_PROMPT_TOKENS: '128000',
    COPILOT_PROVIDER_MAX_OUTPUT_TOKENS: '8000',
    COPILOT_PKG_CACHE_HOME: PKG_CACHE,
    COPILOT_ALLOW_ALL: 'true',
    // A listening hook gives up soon: a second delivery queued behind it would then run (and be seen).
    M4A_LISTEN_SECS: String(LISTEN_SECS),
  };
  const vars = Object.entries({ ...w.env, ...env }).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
  tm(['new-session', '-d', '-x', '200', '-y', '50', '-c', w.project, 'env', ...vars, join(NODE_BIN, 'copilot'), '--experimental', '-i', 'Turn listen mode on and wait for mail.']);
  const screen = (): string => tm(['capture-pane', '-p']);

  await until('the first turn answered', FLOW_MS, () => (model.remaining() === 1 && screen().includes('Listening for mail.') ? true : undefined), 250);
  // Both waits parked for a second (so the mail must wake them, not be found by a first look).
  let seenAt = 0;
  await until('the agentStop hook and the live wait parked', 30_000, () => {
    if (hooks(w.dataDir, 'copilot-stop').length === 0 || hooks(w.dataDir, 'copilot-live').length === 0) return void (seenAt = 0);
    if (seenAt === 0) return void (seenAt = Date.now());
    return Date.now() - seenAt >= 1_000 ? true : undefined;
  });
  const res = await fetch(`${w.url}/mail/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${codex.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to: 'copilot', subject: 'one message', body: 'x' }),
  });
  const sent = (await res.json()) as any;
  assert.equal(res.status, 200, JSON.stringify(sent));
  await until('the woken turn done', FLOW_MS, () => (model.remaining() === 0 && screen().includes('Noted the mail from codex.') ? true : undefined), 100).catch((err: Error) =>
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
