// Live mail between real omp sessions (oh-my-pi 18.2.3 on the npm bun package's binary), each a
// long-running `omp --mode rpc` process with the extension `m4a setup omp` installed, each talking
// to a scripted chat completions server of its own on loopback, and the real daemon the world
// auto-starts. Nobody types to the recipient: the extension's parked live notice injects the mail.
// One HOME serves every session (one extension, one credentials file); ~/.omp/agent/models.yml
// lists one provider per session (alpha/scripted, beta/scripted), so each process has its own
// model server and its own linear script, and requests of two sessions running at once cannot
// take each other's turns. Runs in a loopback-only network namespace (the file name has `omp`).
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, realpathSync } from 'node:fs';
import { basename, join } from 'node:path';
import { MailClient } from '../../src/client/http-client.js';
import { wakeText } from '../../src/wire/wake-text.js';
import { until } from '../support/until.js';
import { BUN } from './support/pi-omp.js';
import { startOmpRpc, writeModels, type OmpRpc } from './support/omp-rpc.js';
import { contentText, startScriptedChat, type ChatTurn, type RecordedChatRequest, type ScriptedChat } from './support/scripted-chat.js';
import { makeWorld, processTree, type World } from './support/world.js';

const TEST_MS = 240_000;
const FLOW_MS = 60_000;
const BUN_EXE = realpathSync(BUN);

interface Setup {
  w: World;
  /** A third party: the test itself, as account `tester`. */
  tester: MailClient;
  /** Working directories (and so slugs) of the two sessions. */
  dirs: { alpha: string; beta: string };
  chat(name: 'alpha' | 'beta', script: ChatTurn[]): Promise<ScriptedChat>;
  /** Writes models.yml for the servers started so far; call before starting omp. */
  models(): void;
  omp(name: 'alpha' | 'beta', args?: string[]): Promise<OmpRpc>;
}

async function setup(t: TestContext): Promise<Setup> {
  const w = await makeWorld('m4a-omp-');
  const chats = new Map<string, ScriptedChat>();
  const procs: OmpRpc[] = [];
  let tester: MailClient | null = null;
  t.after(async () => {
    for (const p of procs) p.kill();
    tester?.close();
    for (const c of chats.values()) await c.close();
    await w.close();
  });
  const setupOut = JSON.parse(await w.m4a(['setup', 'omp', '--json']));
  assert.equal(setupOut.account, 'omp');
  assert.ok(existsSync(join(w.home, '.omp', 'agent', 'extensions', 'mail4agent.ts')), 'setup installed the extension');
  const added = JSON.parse(await w.m4a(['admin', 'account', 'add', 'tester', '--json']));
  tester = new MailClient({ url: w.url, token: added.secret });
  const dirs = { alpha: join(w.project, 'alpha'), beta: join(w.project, 'beta') };
  for (const d of Object.values(dirs)) mkdirSync(d);
  return {
    w,
    tester,
    dirs,
    async chat(name, script) {
      const c = await startScriptedChat(script);
      chats.set(name, c);
      return c;
    },
    models: () => writeModels(w.home, Object.fromEntries([...chats].map(([n, c]) => [n, c.url]))),
    async omp(name, args = []) {
      const p = await startOmpRpc(w, { cwd: dirs[name], model: `${name}/scripted`, args });
      procs.push(p);
      return p;
    },
  };
}

type Msg = { role: string; content: unknown };
const bodyMessages = (body: any): Msg[] => (Array.isArray(body?.messages) ? body.messages : []);
const messages = (r: RecordedChatRequest): Msg[] => bodyMessages(r.body);
const textOf = (m: Msg | undefined): string => (m ? contentText(m.content) : '');
/** Requests that took a scripted turn and whose newest message is a user message naming `id`. */
const triggeredBy = (c: ScriptedChat, id: string): RecordedChatRequest[] =>
  c.requests.filter((r) => r.turn !== null && messages(r).at(-1)?.role === 'user' && textOf(messages(r).at(-1)).includes(id));
/** How many user messages in the request's history name `id`. */
const mentions = (r: RecordedChatRequest, id: string): number => messages(r).filter((m) => m.role === 'user' && textOf(m).includes(id)).length;
const turnRequest = (c: ScriptedChat, turn: number): Promise<RecordedChatRequest> =>
  until(`the request that takes turn ${turn}`, () => c.requests.find((r) => r.turn === turn), FLOW_MS);
/** The exact message the extension injects for one message. */
const injected = (m: { message_id: string; from: string; subject: string }): string => `📬 ${wakeText([m], false)}`;
const parseTool = (text: string | null | undefined, what: string): any => {
  assert.ok(typeof text === 'string', `${what}: no tool result came back`);
  try {
    return JSON.parse(text);
  } catch {
    assert.fail(`${what}: not JSON: ${text}`);
  }
};
/** Index of the message_start event of the user message naming `id` (-1 if none yet). */
const startOf = (p: OmpRpc, id: string): number =>
  p.events.findIndex((e) => e.type === 'message_start' && e.message?.role === 'user' && JSON.stringify(e.message.content).includes(id));
/** The agent_end that follows event index `from`: the session is idle again. */
function idleAfter(p: OmpRpc, from: number): Promise<unknown> {
  assert.ok(from >= 0, 'omp showed the message that started this run');
  return p.waitFor('agent_end', (e) => e.type === 'agent_end', FLOW_MS, from);
}
/** Idle again after the run the user message naming `id` started (or joined). */
const idleAfterMessage = async (p: OmpRpc, id: string): Promise<unknown> => idleAfter(p, (await until(`omp showing ${id}`, () => startOf(p, id) + 1, FLOW_MS)) - 1);

/** Gives B the alias bee with one prompt and waits until B is idle. */
async function beeIdle(b: OmpRpc, chat: ScriptedChat): Promise<void> {
  const from = b.events.length;
  await b.prompt('Take the alias bee, then wait for mail.');
  await idleAfter(b, from);
  assert.equal(chat.requests.filter((r) => r.turn !== null).length, 2, 'the first prompt took the status call and one answer');
}

const setAlias: ChatTurn[] = [{ tool: 'm4a_mail_status', input: { alias: 'bee' } }, { text: 'I am bee now; waiting.' }];

async function sessionsOf(s: Setup): Promise<any[]> {
  const dir = await s.tester.directory({ include_ended: true, detail: true });
  return (dir.accounts.find((a) => a.id === 'omp')?.sessions ?? []) as any[];
}

/** The session `which` picks (a printed account/slug or a full address), attested to a process
 *  under `p`: bun running omp. */
async function attestedSession(s: Setup, which: string, p: OmpRpc): Promise<any> {
  const all = await sessionsOf(s);
  const mine = all.find((x) => x.address === which) ?? all.find((x) => x.live && `omp/${x.slug}` === which);
  assert.ok(mine, `${which} is not among ${JSON.stringify(all.map((x) => [x.address, x.slug]))}`);
  const a = mine.card.attested;
  const tree = processTree(p.pid);
  const proc = tree.find((q) => q.pid === a.pid && q.startTime === a.start_time);
  assert.ok(proc, `attested pid ${a.pid} (${a.exe}) is not omp's process ${p.pid} or under it: ${tree.map((q) => `${q.pid} ${q.exe}`).join('; ')}`);
  assert.equal(realpathSync(proc.exe), BUN_EXE, 'the session is the bun process running omp');
  assert.equal(mine.card.corroborated.provider, 'omp');
  return mine;
}

describe('omp: mail delivered live by the extension', () => {
  it('A mails idle B; B is woken without anyone typing, reads and replies; A gets the reply live; both attested to their omp processes', { timeout: TEST_MS }, async (t) => {
    const s = await setup(t);
    const SUBJECT = 'review the parser change';
    const BODY = 'Please look at src/parse.ts, line 12.';
    const REPLY = 'Looked at it: fine, one nit.';
    const chatA = await s.chat('alpha', [
      { tool: 'm4a_mail_send', input: { to: 'omp/@bee', subject: SUBJECT, body: BODY } },
      { text: 'Asked bee; its answer will come as mail.' },
      { text: 'Bee answered; done.' },
    ]);
    const chatB = await s.chat('beta', [
      ...setAlias,
      { tool: 'm4a_mail_inbox', input: {} },
      {
        tool: 'm4a_mail_reply',
        // The id as B's model read it in its inbox (the last tool result).
        input: (body) => {
          const inbox = JSON.parse(textOf(bodyMessages(body).at(-1)));
          return { message_id: inbox.messages?.find((m: any) => m.subject === SUBJECT)?.message_id, body: REPLY };
        },
      },
      { text: 'Replied to the review request.' },
    ]);
    s.models();
    const [a, b] = await Promise.all([s.omp('alpha'), s.omp('beta')]);
    const [stateA, stateB] = await Promise.all([a.state(), b.state()]);
    await beeIdle(b, chatB);

    await a.prompt('Ask bee to review the parser change.');
    const wakeB = await turnRequest(chatB, 2);
    const replyIn = await turnRequest(chatA, 2);
    await until('every scripted turn taken', () => chatA.remaining() === 0 && chatB.remaining() === 0, FLOW_MS);
    assert.deepEqual([...chatA.problems, ...chatB.problems], []);

    const [sendA] = chatA.exchanges();
    const sentA = parseTool(sendA?.output, "A's send");
    await idleAfterMessage(b, sentA.message_id);
    assert.match(sentA.from, /^omp\/alpha/, "A's address is printed from its folder");
    // B's model got the mail as a user turn of its own, started by the extension, not by a prompt.
    const last = messages(wakeB).at(-1);
    assert.equal(last?.role, 'user');
    assert.equal(textOf(last), injected({ message_id: sentA.message_id, from: sentA.from, subject: SUBJECT }), "the injected text names A's message, its sender and subject");
    assert.ok(!textOf(last).includes(BODY), 'the body is read with the tool, not injected');
    assert.equal(b.events.filter((e) => e.type === 'response' && e.command === 'prompt').length, 1, 'B was prompted once, for its alias');
    const wakeEvent = b.events[startOf(b, sentA.message_id)];
    assert.equal(wakeEvent?.message?.attribution, 'agent', 'omp records the mail as not typed by the user');

    const [, inboxB, replyB] = chatB.exchanges();
    assert.ok(inboxB?.output?.includes(sentA.message_id) && inboxB.output.includes(BODY), `B read A's message with m4a_mail_inbox: ${inboxB?.output}`);
    assert.equal((replyB?.input as any)?.message_id, sentA.message_id, "B replied to A's message");
    const sentB = parseTool(replyB?.output, "B's reply");
    await idleAfterMessage(a, sentB.message_id);
    assert.equal(sentB.to, sentA.from, 'the reply went to the session that asked');
    assert.equal(sentB.thread_id, sentA.thread_id);
    assert.equal(sentA.to, sentB.from, "A's mail went to the session that replied (bee)");

    // A was idle when the reply came, and its model saw it the same way.
    const lastA = messages(replyIn).at(-1);
    assert.equal(lastA?.role, 'user');
    assert.equal(textOf(lastA), injected({ message_id: sentB.message_id, from: sentB.from, subject: `Re: ${SUBJECT}` }));
    assert.equal(a.events.filter((e) => e.type === 'response' && e.command === 'prompt').length, 1, 'A was prompted once');

    // The daemon's records: each sender is its own omp process, naming its conversation.
    for (const [who, p, state, printed, dir] of [
      ['A', a, stateA, sentA.from, s.dirs.alpha],
      ['B', b, stateB, sentB.from, s.dirs.beta],
    ] as const) {
      const card = (await attestedSession(s, printed, p)).card;
      t.diagnostic(`${who}: omp pid ${p.pid}, session ${state.sessionId}; card ${JSON.stringify(card)}`);
      assert.equal(card.attested.pid, p.pid, `${who}: omp runs in the process spawned (bun.exe), which holds the connection`);
      assert.equal(card.corroborated.provider_session_id, state.sessionId, `${who}: provider_session_id is omp's session id`);
      assert.equal(card.corroborated.cwd, dir);
      assert.ok(
        state.sessionFile && existsSync(state.sessionFile) && basename(state.sessionFile).includes(state.sessionId),
        `${who}: omp stores the conversation as ${state.sessionFile}`,
      );
    }
    assert.notEqual(stateA.sessionId, stateB.sessionId);
    await Promise.all([a.stop(), b.stop()]);
  });

  it('mail sent while B is not running reaches B once when it resumes (--resume <id>, then --continue)', { timeout: TEST_MS }, async (t) => {
    const s = await setup(t);
    const chatB = await s.chat('beta', [
      ...setAlias,
      { text: 'Noted the mail from while I was away.' },
      { text: 'Noted the second mail.' },
      { text: 'An unrelated answer.' },
      { text: 'Noted the mail from the second absence.' },
      { text: 'Another unrelated answer.' },
    ]);
    s.models();
    const b1 = await s.omp('beta');
    const state1 = await b1.state();
    await beeIdle(b1, chatB);
    const first = (await sessionsOf(s)).find((x) => x.aliases.includes('@bee'));
    assert.ok(first, 'B is on record with its alias');

    /** Ends B and sends to its alias once the daemon knows it is gone. */
    const awayMail = async (p: OmpRpc, subject: string): Promise<{ message_id: string; from: string; subject: string }> => {
      const exit = await p.stop();
      assert.deepEqual(exit, { code: 0, signal: null }, `omp ended cleanly: ${p.stderr()}`);
      await until('B no longer live', async () => (await sessionsOf(s)).every((x) => !x.live), FLOW_MS, 100);
      const sent = await s.tester.send({ to: 'omp/@bee', subject, body: 'sent while you were not running' });
      assert.equal(sent.redirected, false, 'kept for B, not refused and not sent elsewhere');
      return { message_id: sent.message_id, from: sent.from, subject };
    };
    /** Waits for the request `m` starts and for B to be idle after it. */
    const delivered = async (p: OmpRpc, m: { message_id: string }, turn: number): Promise<RecordedChatRequest> => {
      const r = await turnRequest(chatB, turn);
      assert.equal(triggeredBy(chatB, m.message_id)[0], r, `turn ${turn} was started by ${m.message_id}`);
      await idleAfterMessage(p, m.message_id);
      return r;
    };

    const away1 = await awayMail(b1, 'while you were out');
    const b2 = await s.omp('beta', ['--resume', state1.sessionId]);
    const state2 = await b2.state();
    assert.equal(state2.sessionId, state1.sessionId, '--resume <id> opened the same conversation');
    const got1 = await delivered(b2, away1, 2);
    assert.equal(textOf(messages(got1).at(-1)), injected(away1));
    // The successor on record: same conversation, the new process, the alias carried over.
    const all = await sessionsOf(s);
    const oldB = all.find((x) => x.address === first.address);
    const newB = all.find((x) => x.address === oldB?.successor);
    assert.ok(newB, `the first B has a successor: ${JSON.stringify(all)}`);
    assert.equal((await attestedSession(s, newB.address, b2)).card.attested.pid, b2.pid);
    assert.equal(newB.card.corroborated.provider_session_id, state1.sessionId);
    assert.deepEqual(newB.aliases, ['@bee']);

    // Another mail goes round the same loop: the first is not shown again meanwhile.
    const barrier = await s.tester.send({ to: 'omp/@bee', subject: 'second', body: 'b' });
    await delivered(b2, barrier, 3);
    let from = b2.events.length;
    await b2.prompt('Something unrelated, please.');
    const unrelated = await turnRequest(chatB, 4);
    await idleAfter(b2, from);
    assert.equal(textOf(messages(unrelated).at(-1)), 'Something unrelated, please.');
    assert.equal(triggeredBy(chatB, away1.message_id).length, 1, 'one turn was started for the mail');
    assert.equal(mentions(unrelated, away1.message_id), 1, "the mail is in B's conversation once");

    // The same through --continue (the newest conversation in B's folder).
    const away2 = await awayMail(b2, 'while you were out again');
    const b3 = await s.omp('beta', ['--continue']);
    assert.equal((await b3.state()).sessionId, state1.sessionId, '--continue opened the same conversation');
    await delivered(b3, away2, 5);
    from = b3.events.length;
    await b3.prompt('Another unrelated thing.');
    const last = await turnRequest(chatB, 6);
    await idleAfter(b3, from);
    for (const m of [away1, away2]) {
      assert.equal(triggeredBy(chatB, m.message_id).length, 1, `one turn for ${m.subject}`);
      assert.equal(mentions(last, m.message_id), 1, `${m.subject} is in the conversation once`);
    }
    assert.deepEqual(chatB.problems, []);
    assert.equal(chatB.remaining(), 0);
    await b3.stop();
  });

  it('mail arriving mid-reply is queued and delivered as a follow-up after the reply, attributed to the agent, not framed as the user', { timeout: TEST_MS }, async (t) => {
    const s = await setup(t);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const PROMPT = 'Write the long answer.';
    const ANSWER = 'Here is the long answer.';
    const chatB = await s.chat('beta', [...setAlias, { text: ANSWER, gate }, { text: 'Noted the mail that came meanwhile.' }]);
    s.models();
    const b = await s.omp('beta');
    await beeIdle(b, chatB);
    t.after(() => release());

    const from = b.events.length;
    await b.prompt(PROMPT);
    await turnRequest(chatB, 2); // B's model is answering now, held by the gate
    const sent = await s.tester.send({ to: 'omp/@bee', subject: 'meanwhile', body: 'mid-reply' });
    await until('omp holds the mail queued', async () => (await b.state()).queuedMessageCount >= 1, FLOW_MS, 50);
    assert.equal(chatB.requests.filter((r) => r.turn !== null).length, 3, 'no new model request while B answers');
    release();
    const next = await turnRequest(chatB, 3);
    await idleAfterMessage(b, sent.message_id);

    const tail = messages(next).slice(-3);
    assert.deepEqual(
      tail.map((m) => [m.role, textOf(m)]),
      [
        ['user', PROMPT],
        ['assistant', ANSWER],
        ['user', injected({ message_id: sent.message_id, from: sent.from, subject: 'meanwhile' })],
      ],
      'the reply came first, then the mail as it is, in a user message of its own',
    );
    assert.ok(!/interjection|supersede/i.test(JSON.stringify(next.body.messages)), 'not framed as an interjection of the user');
    const at = startOf(b, sent.message_id);
    assert.equal(b.events[at]?.message?.attribution, 'agent');
    assert.equal(b.events.slice(from, at).filter((e) => e.type === 'agent_end').length, 0, 'a follow-up in the same run, not a new prompt after it');
    assert.deepEqual(chatB.problems, []);
    await b.stop();
  });

  it('measures send commit -> the injected message reaching the model, idle and busy', { timeout: TEST_MS }, async (t) => {
    const s = await setup(t);
    const N = 5;
    const gates: { open: () => void; p: Promise<void> }[] = [];
    for (let i = 0; i < N; i++) {
      let open!: () => void;
      const p = new Promise<void>((r) => (open = r));
      gates.push({ open, p });
    }
    t.after(() => gates.forEach((g) => g.open()));
    const chatB = await s.chat('beta', [
      ...setAlias,
      ...gates.map((): ChatTurn => ({ text: 'Noted.' })),
      ...gates.flatMap((g): ChatTurn[] => [{ text: 'A reply held for a moment.', gate: g.p }, { text: 'Noted after the reply.' }]),
    ]);
    s.models();
    const b = await s.omp('beta');
    await beeIdle(b, chatB);
    let turn = 2;
    // From the send's return, and from the commit the daemon records (stored_at, to the ms).
    const idle: number[] = [];
    const busy: number[] = [];
    const idleCommit: number[] = [];
    const busyCommit: number[] = [];
    const committed = async (id: string): Promise<number> => Date.parse((await s.tester.receipts(id)).receipts[0]!.stored_at);
    let followUps = 0;
    for (let i = 0; i < N; i++) {
      const sent = await s.tester.send({ to: 'omp/@bee', subject: `idle ${i}`, body: 'x' });
      const t0 = Date.now();
      const r = await turnRequest(chatB, turn++);
      assert.ok(textOf(messages(r).at(-1)).includes(sent.message_id));
      idle.push(r.at - t0);
      idleCommit.push(r.at - (await committed(sent.message_id)));
      await idleAfterMessage(b, sent.message_id);
    }
    for (const g of gates) {
      const from = b.events.length;
      await b.prompt('Reply at length.');
      await turnRequest(chatB, turn++);
      const sent = await s.tester.send({ to: 'omp/@bee', subject: `busy ${busy.length}`, body: 'x' });
      const t0 = Date.now();
      g.open();
      const r = await turnRequest(chatB, turn++);
      assert.ok(textOf(messages(r).at(-1)).includes(sent.message_id));
      busy.push(r.at - t0);
      busyCommit.push(r.at - (await committed(sent.message_id)));
      const at = startOf(b, sent.message_id);
      assert.ok(at > from, 'omp showed the mail before asking its model');
      if (b.events.slice(from, at).every((e) => e.type !== 'agent_end')) followUps++;
      await idleAfter(b, at);
    }
    const fig = (xs: number[]): string => {
      const v = [...xs].sort((x, y) => x - y);
      return `min ${v[0]} ms, median ${v[Math.floor(v.length / 2)]} ms, max ${v.at(-1)} ms (${xs.join(', ')})`;
    };
    const lines = [
      `idle B, from the send's return: ${fig(idle)}`,
      `idle B, from stored_at: ${fig(idleCommit)}`,
      `busy B (its reply released right after the send), from the send's return: ${fig(busy)}; ${followUps}/${N} as a follow-up of the same run`,
      `busy B, from stored_at: ${fig(busyCommit)}`,
    ];
    for (const l of lines) t.diagnostic(`send -> the injected message reaching B's model, ${l}`);
    console.log(`omp live mail, send -> injected message at the model:\n  ${lines.join('\n  ')}`);
    assert.deepEqual(chatB.problems, []);
    assert.equal(chatB.remaining(), 0);
    await b.stop();
  });
});
