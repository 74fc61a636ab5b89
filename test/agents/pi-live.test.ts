// pi on the mailbox with the real programs: pi (@mariozechner/pi-coding-agent, run offline with
// PI_OFFLINE=1) wired by `m4a setup pi`, Claude Code (`claude -p`) wired by `m4a setup claude`, the
// real daemon; only the models are scripted servers on loopback. pi runs as a long-lived process
// (`--mode rpc`, prompts as JSON lines on stdin) or in its TUI under tmux; the mail4agent extension
// inside it parks a live notice and injects each batch of mail as a 📬 user message.
//   1. pi ⇄ Claude Code, both ways, nobody typing: idle pi is woken by Claude's mail and replies;
//      Claude, listening in its Stop hook, is woken by the reply; then pi writes first and Claude
//      answers. The daemon attests pi's mail to the pi process and its conversation id.
//   2. Mail sent while pi is not running reaches it once when it resumes (--continue, --session).
//   3. Mail arriving mid-reply is queued as a follow-up and reaches the model after the reply.
//   4. `/mail agents` and `/mail <to> <subject> <body>` typed in the real TUI.
//   5. Send commit → the 📬 message at pi's model, idle and busy (figures, not asserted).
// `m4a setup pi|omp` and unsetup, byte for byte: pi-live-setup.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { until } from '../support/until.js';
import { command, programEnv, SCRIPTED_MODEL } from './support/pi-omp.js';
import { agentEnd, assertPiCard, chat, isMailFor, MAIL, parseJson, pi, sessionOf, sessions, sleep, textOf, toolOutput, userTurns, world } from './support/pi-mailbox.js';
import { startScriptedAnthropic, type AnthropicTurn } from './support/scripted-anthropic.js';
import { contentText, userTexts, type ChatTurn } from './support/scripted-chat.js';
import { describeRun, NODE_BIN, processTree } from './support/world.js';
import { stopHooks } from './support/stop-hooks.js';

const CLAUDE_EXE = realpathSync(join(NODE_BIN, 'claude'));
/** The whole pi ⇄ Claude flow, from `claude -p` starting to its exit. */
const FLOW_MS = 150_000;

/** Claude Code quiet and offline, with the scripted model as its API; its listening Stop hook gives
 *  up well inside the flow's deadline if no mail ever comes. */
const claudeEnv = (modelUrl: string): NodeJS.ProcessEnv => ({
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_TELEMETRY: '1',
  ANTHROPIC_BASE_URL: modelUrl,
  ANTHROPIC_API_KEY: 'test-key',
  M4A_LISTEN_SECS: '120',
});

describe('pi on the mailbox, live', () => {
  it('pi and Claude Code mail each other both ways; the idle one is woken each time; nobody types', { timeout: 240_000 }, async (t) => {
    const c = await world(t, 'm4a-pi-claude-');
    const { w, tester } = c;
    let abandoned = false;
    t.after(() => void (abandoned = true));
    /** Resolves (with the time) once `ready()` holds and Claude's Stop hook has been parked for
     *  `holdMs`, as a real model's think time would allow; with 0 if that never happens. */
    const claudeParked = (ready: () => boolean, holdMs = 1_000): Promise<number> =>
      (async () => {
        const end = Date.now() + FLOW_MS;
        let since = 0;
        while (!abandoned && Date.now() < end) {
          if (!ready() || stopHooks(w.dataDir).length === 0) since = 0;
          else if (since === 0) since = Date.now();
          else if (Date.now() - since >= holdMs) return Date.now();
          await sleep(20);
        }
        return 0;
      })();

    let claudeAddress = ''; // Claude's session, as `m4a listen on` named it
    const S1 = 'which port does the staging proxy use';
    const R1 = 'The staging proxy listens on 8443.';
    const S2 = 'the build is green';
    const R2 = 'Thanks pi, I will deploy it.';
    const lastMailId = (turn: number): string => {
      const q = claudeModel.requests.findLast((r) => r.turn === turn);
      const m = JSON.stringify(q?.body?.messages?.at(-1) ?? '').match(/- (m-[0-9a-z]+) from /);
      return m?.[1] ?? 'no-mail-named';
    };
    const claudeScript: AnthropicTurn[] = [
      { tool: 'Bash', input: { command: 'm4a listen on', description: 'Turn mail listen mode on' } },
      { tool: 'mcp__m4a__m4a_mail_send', input: { to: 'pi/@pibox', subject: S1, body: 'I need the staging proxy port for the deploy script.' } },
      { text: 'Asked pi; waiting for the answer.' }, // the Stop hook listens
      { tool: 'mcp__m4a__m4a_mail_inbox', input: {} }, // after the Stop hook's reason: pi's reply
      { text: 'pi answered; still listening.' }, // the Stop hook listens again
      // After the reason naming pi's mail: the id is read from the request that takes this turn.
      { tool: 'mcp__m4a__m4a_mail_reply', input: { toJSON: () => ({ message_id: lastMailId(5), body: R2 }) } },
      { tool: 'Bash', input: { command: 'm4a listen off', description: 'Turn mail listen mode off' } },
      { text: 'Done.' },
    ];
    const claudeModel = await startScriptedAnthropic(claudeScript);
    c.later(() => claudeModel.close());
    const piParkGate = claudeParked(() => claudeModel.remaining() <= 5);
    const piModel = await chat(c, [
      { tool: 'm4a_mail_status', input: { alias: 'pibox' } },
      { text: 'I am pi/@pibox now.' },
      { tool: 'm4a_mail_inbox', input: {} }, // the 📬 turn: nobody typed
      {
        tool: 'm4a_mail_reply',
        gate: piParkGate,
        input: (body) => {
          const m = (parseJson(toolOutput(body, 'call_scripted_2'), "pi's inbox").messages as any[]).find((x) => x.subject === S1);
          return { message_id: String(m?.message_id), body: R1 };
        },
      },
      { text: 'Answered claude.' },
      { tool: 'm4a_mail_send', input: () => ({ to: claudeAddress, subject: S2, body: 'All 412 tests pass on main.' }) },
      { text: 'Told claude.' },
      { text: 'Claude will deploy; nothing more to do.' }, // the 📬 turn with Claude's answer
    ]);
    await w.m4a(['setup', 'claude', '--user']);

    const p = pi(c, join(w.root, 'pi-desk'));
    await p.prompt('Take the mail alias pibox.');
    await agentEnd(p, 0, 'pi to take its alias');
    const { sessionId: piSession, sessionFile } = await p.state();
    // The conversation id pi records in its session file's header is the one it reports.
    assert.deepEqual(JSON.parse(readFileSync(sessionFile, 'utf8').split('\n')[0]!).id, piSession);

    const claudeRun = w.run(
      'claude',
      [
        '-p',
        'Ask pi for the staging proxy port, then keep listening for mail.',
        '--output-format',
        'json',
        '--allowedTools',
        'Bash,mcp__m4a__m4a_mail_send,mcp__m4a__m4a_mail_inbox,mcp__m4a__m4a_mail_reply',
      ],
      { cwd: w.project, env: claudeEnv(claudeModel.url), timeoutMs: FLOW_MS },
    );
    // ---- Claude → pi: pi is idle; its extension starts a turn with the mail ----------------------
    const woke = await p.waitFor("pi woken by Claude's mail", isMailFor(''), FLOW_MS);
    await agentEnd(p, p.events.indexOf(woke), "pi's reply turn");
    assert.ok((await piParkGate) > 0, "pi's model answered only once Claude's Stop hook listened");
    // ---- pi → Claude: once Claude listens again, pi writes first ----------------------------------
    assert.ok((await claudeParked(() => claudeModel.remaining() <= 3)) > 0, "Claude's Stop hook never listened again");
    claudeAddress = claudeModel.exchanges()[0]?.result?.match(/claude\/s-[0-9a-f]+/)?.[0] ?? '';
    assert.ok(claudeAddress, `m4a listen on: ${claudeModel.exchanges()[0]?.result}`);
    const typedAt = p.events.length;
    await p.prompt('Tell claude the build is green.');
    const r = await claudeRun;
    assert.ok(r.code === 0 && !r.timedOut, `claude -p did not succeed:\n${describeRun(r)}`);
    const out = JSON.parse(r.stdout);
    assert.equal(out.result, 'Done.', r.stdout);
    const [, sendA, inboxA, replyA] = claudeModel.exchanges();
    const sentA = parseJson(sendA?.result, "Claude's send");
    const repliedA = parseJson(replyA?.result, "Claude's reply");
    const answered = await p.waitFor("pi woken by Claude's answer", isMailFor(repliedA.message_id), 30_000, typedAt);
    await agentEnd(p, p.events.indexOf(answered));

    // ---- what each model saw ------------------------------------------------------------------------
    assert.deepEqual(piModel.problems, [], `offered to pi: ${piModel.toolNames().join(', ')}`);
    assert.deepEqual(claudeModel.problems, [], `offered to Claude: ${claudeModel.toolNames().join(', ')}`);
    assert.equal(piModel.remaining(), 0, "every one of pi's scripted turns was taken");
    assert.equal(claudeModel.remaining(), 0, "every one of Claude's scripted turns was taken");
    const turns = userTurns(p.events).map(textOf);
    assert.equal(turns.length, 4, `pi's user turns: ${JSON.stringify(turns)}`);
    assert.equal(turns[0], 'Take the mail alias pibox.');
    assert.ok(turns[1]!.startsWith(MAIL) && turns[1]!.includes(`- ${sentA.message_id} from ${sentA.from}: ${JSON.stringify(S1)}`), `the first 📬 names Claude's mail: ${turns[1]}`);
    assert.ok(!turns[1]!.includes('staging proxy port for'), 'the 📬 message carries no body');
    assert.equal(turns[2], 'Tell claude the build is green.');
    assert.ok(turns[3]!.startsWith(MAIL) && turns[3]!.includes(`- ${repliedA.message_id} from ${sentA.from}: `), `the second 📬 names Claude's answer: ${turns[3]}`);
    const wokeReq = piModel.requests.find((q) => q.turn === 2)!;
    assert.equal(userTexts(wokeReq.body).at(-1), turns[1], "pi's model got the 📬 message as its last user turn");
    const [, inboxPi, replyPi, sendPi] = piModel.exchanges(); // tool turns only
    assert.ok(inboxPi?.output?.includes('I need the staging proxy port'), `pi read the body with m4a_mail_inbox: ${inboxPi?.output}`);
    const repliedPi = parseJson(replyPi?.output, "pi's reply");
    assert.equal(repliedPi.to, sentA.from, "pi's reply went to the Claude session that asked");
    assert.equal(repliedPi.thread_id, sentA.thread_id, "pi's reply joined Claude's thread");
    const afterReason = claudeModel.requests.find((q) => q.turn === 3)!;
    assert.ok(JSON.stringify(afterReason.body.messages.at(-1)).includes(repliedPi.message_id), "Claude's model got the Stop hook's reason naming pi's reply");
    assert.ok(inboxA?.result?.includes(R1), `Claude read pi's reply: ${inboxA?.result}`);
    const sentPi = parseJson(sendPi?.output, "pi's send");
    assert.equal(sentPi.to, sentA.from, "pi's mail went to Claude's session");
    assert.equal(lastMailId(5), sentPi.message_id, "the Stop hook's second reason named pi's mail");
    assert.equal(repliedA.thread_id, sentPi.message_id, "Claude's answer joined pi's thread");
    assert.equal(repliedA.to, repliedPi.from, "Claude's answer went to pi's session");
    assert.ok(!p.events.some((e) => e.ev?.type === 'extension_error'), 'no extension_error');

    // ---- the daemon's records: each sender is its own program ---------------------------------------
    assert.equal(sentPi.from, repliedPi.from, 'both of pi’s messages came from one session');
    assertPiCard(await sessionOf(tester, repliedPi.from), p, piSession);
    const claudeCard = (await sessionOf(tester, sentA.from)).card as any;
    const claudeProc = r.seen.find((x) => x.pid === claudeCard.attested?.pid && x.startTime === claudeCard.attested?.start_time);
    assert.ok(claudeProc && realpathSync(claudeProc.exe) === CLAUDE_EXE, `Claude's mail is attested to ${JSON.stringify(claudeCard.attested)}`);
    assert.equal(claudeCard.corroborated.provider, 'claude');
    assert.equal(claudeCard.corroborated.provider_session_id, out.session_id);
    t.diagnostic(`pi ${piSession}, claude ${out.session_id}; claude -p ran ${r.ms} ms`);
  });

  it('mail sent while pi is not running reaches it once when it resumes: --continue, --session FILE, --session ID', { timeout: 120_000 }, async (t) => {
    const c = await world(t, 'm4a-pi-resume-');
    const { w, tester } = c;
    const flags: [string, (s: any) => string[]][] = [
      ['--continue', () => ['--continue']],
      ['--session FILE', (s) => ['--session', s.sessionFile]],
      ['--session ID', (s) => ['--session', s.sessionId]],
    ];
    const model = await chat(c, [
      { tool: 'm4a_mail_status', input: { alias: 'away' } },
      { text: 'I answer to pi/@away.' },
      ...flags.flatMap((): ChatTurn[] => [{ text: 'Noted the mail from while I was away.' }, { text: 'Nothing else.' }]),
    ]);
    const dir = join(w.root, 'pi-resume');
    let p = pi(c, dir);
    await p.prompt('Take the mail alias away.');
    await agentEnd(p, 0);
    const first = await p.state();
    const sent: string[] = [];
    for (const [flag, args] of flags) {
      await p.stop();
      assert.equal((await p.exited).code, 0, `pi exits when its stdin closes: ${p.stderr()}`);
      const m = await tester.send({ to: 'pi/@away', subject: `while you were away (${flag})`, body: 'The release moved to Friday.' });
      assert.deepEqual([m.to, m.redirected], ['pi/pi-resume', false], `mail to the stopped session is kept for it: ${JSON.stringify(m)}`);
      sent.push(m.message_id);
      p = pi(c, dir, args(first));
      const got = await p.waitFor(`the mail injected after ${flag}`, isMailFor(m.message_id), 30_000);
      await agentEnd(p, p.events.indexOf(got));
      const st = await p.state();
      assert.equal(st.sessionId, first.sessionId, `${flag} resumed the same conversation`);
      const at = p.events.length;
      await p.prompt('Anything else?');
      await agentEnd(p, at);
      const last = model.requests.at(-1)!;
      assert.deepEqual(userTexts(last.body).at(-1), 'Anything else?');
      for (const id of sent) assert.equal(userTexts(last.body).filter((x) => x.includes(id)).length, 1, `${flag}: ${id} is in the conversation exactly once`);
      assert.equal(userTurns(p.events).filter((e) => textOf(e).startsWith(MAIL)).length, 1, `${flag}: one 📬 message in this process`);
      assertPiCard(await sessionOf(tester, 'pi/@away'), p, first.sessionId);
      t.diagnostic(`${flag}: resumed ${first.sessionId}; the mail reached the model once`);
    }
    await p.stop();
    assert.deepEqual(model.problems, []);
    assert.equal(model.remaining(), 0);
    // One lineage: each process's session is the successor of the one before.
    const line = (await sessions(tester, 'pi')).filter((s) => (s.card as any).corroborated?.provider_session_id === first.sessionId);
    assert.equal(line.length, flags.length + 1, JSON.stringify(line.map((s) => s.address)));
    for (let i = 0; i + 1 < line.length; i++) assert.equal(line[i]!.successor, line[i + 1]!.address, `session ${i} is succeeded by session ${i + 1}`);
  });

  it('mail arriving mid-reply is queued as a follow-up and reaches the model after the reply, not dropped', { timeout: 90_000 }, async (t) => {
    const c = await world(t, 'm4a-pi-busy-');
    const { w, tester } = c;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    t.after(() => release());
    const model = await chat(c, [{ tool: 'bash', input: { command: 'echo step-one' }, gate }, { text: 'Step one is done.' }, { text: 'Noted the mail; nothing to do now.' }]);
    const p = pi(c, join(w.root, 'pi-busy'));
    await p.prompt('Do step one.');
    await until('pi waiting on its model', () => model.requests.some((q) => q.turn === 0), 30_000);
    const m = await tester.send({ to: 'pi/pi-busy', subject: 'meanwhile', body: 'FYI: CI is slow today.' });
    const queued = await p.waitFor('the mail queued as a follow-up', (ev) => ev?.type === 'queue_update' && JSON.stringify(ev.followUp ?? []).includes(m.message_id), 30_000);
    assert.deepEqual(queued.ev.steering, [], 'not a steer');
    assert.equal((await p.state()).isStreaming, true, 'pi was still busy when the mail was queued');
    release();
    const reached = await until('the model request after the reply', () => model.requests.find((q) => q.turn === 2), 30_000);
    await agentEnd(p, p.events.indexOf(queued));
    const afterTool = model.requests.find((q) => q.turn === 1)!;
    assert.deepEqual(userTexts(afterTool.body), ['Do step one.'], 'the mail did not enter the turn (a follow-up, not a steer)');
    const msgs = reached.body.messages as any[];
    assert.equal(msgs.at(-2)?.role, 'assistant');
    assert.equal(contentText(msgs.at(-2)?.content), 'Step one is done.', 'the reply comes before the mail');
    assert.equal(msgs.at(-1)?.role, 'user');
    assert.ok(contentText(msgs.at(-1)?.content).startsWith(MAIL) && contentText(msgs.at(-1)?.content).includes(m.message_id), JSON.stringify(msgs.at(-1)));
    assert.deepEqual(
      userTurns(p.events).map((e) => textOf(e).slice(0, MAIL.length)),
      ['Do step one.', MAIL],
      'the mail reached the conversation once',
    );
    const errors = p.events.filter((e) => e.ev?.type === 'extension_error');
    assert.deepEqual(errors, [], 'no extension_error');
    assert.deepEqual(model.problems, []);
  });

  it('/mail typed in the real TUI lists the agents and sends mail, from the TUI session', { timeout: 120_000 }, async (t) => {
    const c = await world(t, 'm4a-pi-tui-');
    const { w, tester } = c;
    const model = await chat(c, [
      { tool: 'm4a_mail_status', input: { alias: 'peer' } },
      { text: 'I answer to pi/@peer.' },
      { tool: 'm4a_mail_inbox', input: {} }, // the 📬 turn
      { text: 'Read the mail from the TUI.' },
    ]);
    const peer = pi(c, join(w.root, 'pi-peer'));
    await peer.prompt('Take the mail alias peer.');
    await agentEnd(peer, 0);

    const sock = join(w.root, 'tmux.sock');
    const env = { ...w.env, ...programEnv('pi'), TERM: 'xterm-256color' };
    const tmux = (...a: string[]): string => {
      const r = spawnSync('tmux', ['-f', '/dev/null', '-S', sock, ...a], { env, encoding: 'utf8', timeout: 10_000 });
      assert.equal(r.status, 0, `tmux ${a.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    let tuiPid = 0;
    c.later(async () => {
      spawnSync('tmux', ['-S', sock, 'kill-server'], { timeout: 10_000 });
      // The pane's pi ends on the hangup; until it has, its extension could restart the daemon.
      for (let i = 0; i < 50 && tuiPid > 0 && processTree(tuiPid).length > 0; i++) await sleep(100);
    });
    const tuiDir = join(w.root, 'pi-tui');
    mkdirSync(tuiDir);
    const { cmd, args } = command('pi');
    tmux('new-session', '-d', '-x', '200', '-y', '50', '-c', tuiDir, cmd, ...args, '--model', SCRIPTED_MODEL);
    const pane = (): string => tmux('capture-pane', '-p', '-J');
    const shows = async (what: string, match: (s: string) => boolean): Promise<string> => {
      try {
        return await until(what, () => (match(pane()) ? pane() : undefined), 30_000, 100);
      } catch {
        assert.fail(`timed out waiting for ${what}; the pane shows:\n${pane()}`);
      }
    };
    await shows('the TUI loaded the extension', (s) => s.includes('mail4agent.ts'));
    tuiPid = Number(tmux('display-message', '-p', '#{pane_pid}').trim());
    const tui = await until('the TUI session on record', async () => (await sessions(tester, 'pi')).find((s) => s.live && (s.card as any).attested?.pid === tuiPid), 30_000, 100);
    const peerSession = await sessionOf(tester, 'pi/@peer');

    tmux('send-keys', '-l', '/mail agents');
    tmux('send-keys', 'Enter');
    const lines = (s: string): string[] => s.split('\n').map((l) => l.trim());
    const listed = await shows('the agents list', (s) => [`pi/${tui.slug}`, `pi/${peerSession.slug}`].every((a) => lines(s).includes(a)));
    tmux('send-keys', '-l', '/mail peer hello-from-tui first live mail');
    tmux('send-keys', 'Enter');
    const sentPane = await shows('the → confirmation', (s) => /→ pi\/\S+ · hello-from-tui · m-/.test(s));
    const line = sentPane
      .split('\n')
      .find((l) => l.includes('→ pi/'))!
      .trim();
    t.diagnostic(
      `TUI: /mail agents listed ${lines(listed)
        .filter((l) => /^[\w-]+\/\S+$/.test(l))
        .join(', ')}; /mail peer … printed ${line}`,
    );
    const id = line.match(/· (m-[0-9a-z]+)$/)?.[1] ?? 'no-id';
    assert.match(line, new RegExp(`→ pi/(${peerSession.slug}|@peer) · hello-from-tui · ${id}`), 'sent to the peer session');

    // The peer's model got it live, read it: from the TUI's session, with the body.
    const got = await peer.waitFor('the mail at the peer', isMailFor(id), 30_000);
    await agentEnd(peer, peer.events.indexOf(got));
    assert.ok(textOf(got).includes(`- ${id} from pi/${tui.slug}: "hello-from-tui"`), textOf(got));
    const inbox = parseJson(model.exchanges()[1]?.output, "the peer's inbox");
    const mail = (inbox.messages as any[]).find((x) => x.message_id === id);
    assert.equal(mail?.body, 'first live mail');
    assert.equal(mail?.from, `pi/${tui.slug}`);
    const card = tui.card as any;
    assert.equal(card.attested.exe, realpathSync(process.execPath), 'the pane runs pi on node');
    assert.equal(card.corroborated?.provider, 'pi');
    assert.match(card.corroborated.provider_session_id ?? '', /^[0-9a-f-]{36}$/);
    assert.deepEqual(model.problems, []);
  });

  it('figures: send commit → the 📬 message at pi’s model, idle and busy', { timeout: 120_000 }, async (t) => {
    const c = await world(t, 'm4a-pi-figures-');
    const { w, tester } = c;
    const N = 5;
    const gate = (): { p: Promise<void>; open: () => void } => {
      let open!: () => void;
      const p = new Promise<void>((r) => (open = r));
      t.after(() => open());
      return { p, open };
    };
    const atSend = Array.from({ length: N }, gate); // released right after the send
    const held = Array.from({ length: N }, gate); // released once pi has queued the mail
    const model = await chat(c, [
      ...Array.from({ length: N }, (): ChatTurn => ({ text: 'Noted.' })),
      ...[...atSend, ...held].flatMap((g): ChatTurn[] => [{ text: 'Working on it.', gate: g.p }, { text: 'Noted.' }]),
    ]);
    const p = pi(c, join(w.root, 'pi-figures'));
    await until('pi on record', async () => (await sessions(tester, 'pi')).some((s) => s.live && (s.card as any).attested?.pid === p.pid), 30_000);
    const reach = async (id: string): Promise<number> =>
      (await until(`the 📬 for ${id} at the model`, () => model.requests.find((q) => userTexts(q.body).at(-1)?.includes(id)), 30_000, 5)).at;
    const queuedFor = (id: string, from: number) =>
      p.waitFor(`${id} queued as a follow-up`, (ev) => ev?.type === 'queue_update' && JSON.stringify(ev.followUp ?? []).includes(id), 30_000, from);
    const idle: number[] = [];
    for (let i = 0; i < N; i++) {
      const from = p.events.length;
      const m = await tester.send({ to: 'pi/pi-figures', subject: `idle ${i}`, body: 'x' });
      const t0 = Date.now();
      idle.push((await reach(m.message_id)) - t0);
      await agentEnd(p, from);
    }
    /** Starts a turn (its model answer waits for its gate), sends mail meanwhile; `t0` is just after the commit. */
    const busyTurn = async (i: number, then: (id: string, t0: number, from: number) => Promise<void>): Promise<void> => {
      const from = p.events.length;
      const before = model.requests.length;
      await p.prompt(`Work item ${i}.`);
      await until('pi waiting on its model', () => model.requests.length > before, 30_000, 5);
      const m = await tester.send({ to: 'pi/pi-figures', subject: `busy ${i}`, body: 'x' });
      await then(m.message_id, Date.now(), from);
      await agentEnd(p, from);
    };
    const busy: number[] = [];
    let queued = 0; // of those, how many pi still held as a follow-up (else its turn had ended)
    for (const [i, g] of atSend.entries()) {
      await busyTurn(i, async (id, t0, from) => {
        g.open();
        busy.push((await reach(id)) - t0);
        if (p.events.slice(from).some((e) => e.ev?.type === 'queue_update' && JSON.stringify(e.ev.followUp ?? []).includes(id))) queued++;
      });
    }
    const toQueue: number[] = [];
    const afterRelease: number[] = [];
    for (const [i, g] of held.entries()) {
      await busyTurn(N + i, async (id, t0, from) => {
        toQueue.push((await queuedFor(id, from)).at - t0);
        const released = Date.now();
        g.open();
        afterRelease.push((await reach(id)) - released);
      });
    }
    const stat = (xs: number[]): string => {
      const s = [...xs].sort((a, b) => a - b);
      return `min ${s[0]} ms, median ${s[Math.floor(s.length / 2)]} ms, max ${s.at(-1)} ms (${xs.join(', ')})`;
    };
    t.diagnostic(`pi idle: send commit → 📬 at the model: ${stat(idle)}`);
    t.diagnostic(`pi busy (gate released at the send): send commit → 📬 at the model: ${stat(busy)}; ${queued} of ${N} queued as a follow-up`);
    t.diagnostic(`pi busy (answer held until queued): send commit → queued as a follow-up ${stat(toQueue)}; answer released → 📬 at the model ${stat(afterRelease)}`);
    assert.ok(!p.events.some((e) => e.ev?.type === 'extension_error'), 'no extension_error');
    assert.deepEqual(model.problems, []);
    assert.equal(model.remaining(), 0);
  });
});
