// Programs whose MCP bridge names no conversation (Gemini, opencode): with real processes and real
// attestation, a session first met without its program's id adopts the one a later helper's
// environment carries (Gemini's hooks) or its own process reports (opencode's plugin), and a helper
// never replaces an id the card has. Qwen Code's and Copilot's bridges carry theirs from the start.
// Stand-ins are agent-proc.mjs copied under each program's name, so the provider is the real rule's.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_SCRIPT, startAgent, type AgentProc } from './support/agent.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { recordingLogger, type LogLine } from './support/recording-logger.js';

const G1 = '53dddd9d-c249-453a-a7c7-83f005431f1d';
const G2 = '6a0e7c41-7d6b-4c1e-9f55-2b8d3c4e5f60';
const G3 = '0f4b9a7e-1c2d-4e5f-8a9b-c0d1e2f3a4b5';
const G4 = '9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b';

interface Card {
  session: string;
  address: string;
  slug: string | null;
  card: { corroborated: { provider?: string; provider_session_id?: string } };
}

describe('a session adopts its program id later', () => {
  let d: TestDaemon;
  let tmp: string;
  const secrets: Record<string, string> = {};
  const procs: AgentProc[] = [];
  const lines: LogLine[] = [];

  before(async () => {
    d = await startTestDaemon({ log: recordingLogger(lines) });
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'm4a-adopt-')));
    writeFileSync(join(tmp, 'package.json'), '{"type":"module"}');
    for (const p of ['gemini', 'opencode', 'qwen', 'copilot']) copyFileSync(AGENT_SCRIPT, join(tmp, p));
    for (const a of ['gm', 'oc', 'qw', 'cp', 'gp', 'gr', 'op']) secrets[a] = (await d.account(a)).secret;
    await d.account('alice');
  });
  after(async () => {
    for (const p of procs) await p.exit();
    await d.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  const agent = async (program: string, account: string, args: string[] = []): Promise<AgentProc> => {
    const p = await startAgent(d.url, secrets[account]!, { script: join(tmp, program), args, cwd: tmp });
    procs.push(p);
    return p;
  };
  const whoami = async (p: AgentProc): Promise<Card> => (await p.call('/mail/whoami')).body as Card;

  /** whoami from a helper the agent runs (a shell holding its own connection, as a hook's `m4a` does),
   *  with `env` in the helper's environment only, and `headers` sent. */
  const helperWhoami = async (p: AgentProc, account: string, env: Record<string, string>, headers = ''): Promise<Card> => {
    const url = new URL(d.url);
    const script = [
      `exec 3<>/dev/tcp/${url.hostname}/${url.port}`,
      `printf 'POST /mail/whoami HTTP/1.1\\r\\nHost: %s\\r\\nAuthorization: Bearer %s\\r\\n${headers}Content-Type: application/json\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\n{}' "$HOSTPORT" "$TOKEN" >&3`,
      // Builtins only: a child (cat) would hold the socket too, and a shared socket is ambiguous.
      'while IFS= read -r line <&3 || [ -n "$line" ]; do printf \'%s\\n\' "$line"; done',
    ].join('\n');
    const out = (await p.call('bash', { script, env: { ...env, HOSTPORT: url.host, TOKEN: secrets[account]! } })).body as string;
    return JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4).trim()) as Card;
  };

  it("Gemini: met first by its bridge with no id, it takes the id of a later hook's GEMINI_SESSION_ID, and keeps it", async () => {
    const g = await agent('gemini', 'gm');
    const first = await whoami(g);
    assert.deepEqual(first.card.corroborated.provider, 'gemini');
    assert.equal(first.card.corroborated.provider_session_id, undefined);

    const hook = await helperWhoami(g, 'gm', { GEMINI_SESSION_ID: G1 });
    assert.equal(hook.session, first.session, 'the hook speaks for the same session');
    assert.equal(hook.card.corroborated.provider_session_id, G1);
    assert.equal((await whoami(g)).card.corroborated.provider_session_id, G1, 'the card keeps it');

    // Another helper's variable (set by hand in the agent's shell tool) never replaces it.
    const forged = await helperWhoami(g, 'gm', { GEMINI_SESSION_ID: G2 });
    assert.equal(forged.card.corroborated.provider_session_id, G1);
    assert.equal((await whoami(g)).card.corroborated.provider_session_id, G1);
    await g.exit();

    // Resumed as `m4a open` prints it (`gemini --resume ID`): the id is in its argv at first
    // contact, so the new process is the ended one's successor, and mail to the old address finds it.
    const resumed = await agent('gemini', 'gm', ['--resume', G1]);
    const next = await whoami(resumed);
    assert.notEqual(next.session, first.session);
    assert.equal(next.card.corroborated.provider_session_id, G1);
    const alice = (await d.account('alice-g')).client;
    const sent = await alice.send({ to: first.address, subject: 'for the resumed one', body: 'b' });
    assert.equal(sent.redirected, true, JSON.stringify(sent));
    const inbox = (await resumed.call('/mail/inbox', { wait_secs: 0 })).body as { messages: { subject: string }[] };
    assert.deepEqual(
      inbox.messages.map((m) => m.subject),
      ['for the resumed one'],
    );
  });

  it('opencode: its own process names its session (its plugin) after its bridge came without one, and may switch; a helper may not', async () => {
    const o = await agent('opencode', 'oc');
    const first = await whoami(o);
    assert.equal(first.card.corroborated.provider, 'opencode');
    assert.equal(first.card.corroborated.provider_session_id, undefined);

    await o.call('headers', { 'x-m4a-agent-session': 'ses_first' });
    const named = await whoami(o);
    assert.equal(named.session, first.session);
    assert.equal(named.card.corroborated.provider_session_id, 'ses_first');
    await o.call('headers', { 'x-m4a-agent-session': 'ses_second' });
    assert.equal((await whoami(o)).card.corroborated.provider_session_id, 'ses_second', 'the TUI switched sessions');

    // Its bash tool sending the header speaks as the session but names nothing.
    const helper = await helperWhoami(o, 'oc', { OPENCODE: '1' }, 'x-m4a-agent-session: ses_hijack\\r\\n');
    assert.equal(helper.session, first.session);
    assert.equal(helper.card.corroborated.provider_session_id, 'ses_second');

    // Not an extension provider: mail to it once it ended is refused, not kept.
    await o.exit();
    const alice = (await d.account('alice-o')).client;
    await assert.rejects(alice.send({ to: first.address, subject: 's', body: 'b' }), { code: 'session_ended' });
  });

  it("Qwen Code and Copilot: the bridge's QWEN_CODE_SESSION_ID or COPILOT_AGENT_SESSION_ID names the session at first contact", async () => {
    for (const [program, account, name] of [
      ['qwen', 'qw', 'QWEN_CODE_SESSION_ID'],
      ['copilot', 'cp', 'COPILOT_AGENT_SESSION_ID'],
    ] as const) {
      const p = await agent(program, account);
      const bridge = await helperWhoami(p, account, { [name]: G2 });
      assert.equal(bridge.card.corroborated.provider, program);
      assert.equal(bridge.card.corroborated.provider_session_id, G2, program);
      // A variable naming another program's session is not this one's.
      const other = await helperWhoami(p, account, { GEMINI_SESSION_ID: G1 });
      assert.equal(other.card.corroborated.provider_session_id, G2, program);
    }
  });
  /** The facts of the daemon's log line that starts so, without the request's id. */
  const logged = (msg: string): object | undefined => {
    const line = lines.find((l) => l.msg?.startsWith(msg));
    if (!line) return undefined;
    const { req_id: _, ...facts } = line.obj as Record<string, unknown>;
    return facts;
  };
  const subjects = async (p: AgentProc): Promise<string[]> =>
    ((await p.call('/mail/inbox', { wait_secs: 0 })).body as { messages: { subject: string }[] }).messages.map((m) => m.subject);

  /** An ended Gemini session of `account` that its hook named `id`, with session mail it never read. */
  const endedGemini = async (account: string, id: string, subject: string): Promise<Card> => {
    const g = await agent('gemini', account);
    await whoami(g);
    const first = await helperWhoami(g, account, { GEMINI_SESSION_ID: id });
    assert.equal(first.card.corroborated.provider_session_id, id);
    await (await d.account(`${account}-peer`)).client.send({ to: first.address, subject, body: 'b' });
    await g.exit();
    return first;
  };

  it("Gemini resumed by a picker (`--resume latest`): the id its hook names late makes it the ended session's successor, reading the mail that waited", async () => {
    const first = await endedGemini('gp', G3, 'while you were away');
    const resumed = await agent('gemini', 'gp', ['--resume', 'latest']);
    const met = await whoami(resumed);
    assert.notEqual(met.session, first.session);
    assert.equal(met.card.corroborated.provider_session_id, undefined, 'its argv names no conversation');
    assert.notEqual(met.slug, first.slug, 'first met, it starts a lineage of its own');

    const hook = await helperWhoami(resumed, 'gp', { GEMINI_SESSION_ID: G3 });
    assert.equal(hook.session, met.session);
    assert.equal(hook.card.corroborated.provider_session_id, G3);
    assert.equal(hook.slug, first.slug, "it took the predecessor's lineage and its name");
    assert.deepEqual(await subjects(resumed), ['while you were away']);
    assert.deepEqual(logged('session joined its predecessor'), { account: 'gp', session: met.session, predecessor: first.session, lineage: first.session });

    // Its own first name is free again, and mail to the old address reaches it.
    const alice = (await d.account('alice-gp')).client;
    await assert.rejects(alice.send({ to: `gp/${met.slug}`, subject: 's', body: 'b' }), { code: 'unknown_session' });
    assert.equal((await alice.send({ to: met.address, subject: 'by its id', body: 'b' })).to, `gp/${first.slug}`);
    const sent = await alice.send({ to: first.address, subject: 'later', body: 'b' });
    assert.equal(sent.redirected, true, JSON.stringify(sent));
    assert.deepEqual(await subjects(resumed), ['while you were away', 'by its id', 'later']);
  });

  it("opencode resumed by `--continue`: the session its plugin names late is an ended one's, so it joins that lineage", async () => {
    const o = await agent('opencode', 'op');
    await o.call('headers', { 'x-m4a-agent-session': 'ses_kept' });
    const first = await whoami(o);
    assert.equal(first.card.corroborated.provider_session_id, 'ses_kept');
    await (await d.account('alice-op')).client.send({ to: first.address, subject: 'for ses_kept', body: 'b' });
    await o.exit();

    const next = await agent('opencode', 'op', ['--continue']);
    const met = await whoami(next);
    assert.equal(met.card.corroborated.provider_session_id, undefined);
    await next.call('headers', { 'x-m4a-agent-session': 'ses_kept' });
    const named = await whoami(next);
    assert.equal(named.session, met.session);
    assert.equal(named.slug, first.slug);
    assert.deepEqual(await subjects(next), ['for ses_kept']);
  });

  it('refused when mail already came to the lineage it started: it keeps that lineage (and says why), and the predecessor keeps its mail', async () => {
    const first = await endedGemini('gr', G4, 'kept for the predecessor');
    const resumed = await agent('gemini', 'gr', ['--resume', 'latest']);
    const met = await whoami(resumed);
    const alice = (await d.account('alice-gr')).client;
    await alice.send({ to: met.address, subject: 'to the new session', body: 'b' });

    const hook = await helperWhoami(resumed, 'gr', { GEMINI_SESSION_ID: G4 });
    assert.equal(hook.card.corroborated.provider_session_id, G4, 'the id is adopted all the same');
    assert.equal(hook.slug, met.slug, 'its own lineage and name stay');
    assert.deepEqual(await subjects(resumed), ['to the new session']);
    assert.deepEqual(logged('session keeps its own lineage'), { account: 'gr', session: met.session, predecessor: first.session, reason: 'mail' });
    // The predecessor has no successor: mail to it is refused as before, and its mail stays its own.
    await assert.rejects(alice.send({ to: first.address, subject: 's', body: 'b' }), { code: 'session_ended' });
  });
});
