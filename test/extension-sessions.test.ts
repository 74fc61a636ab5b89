// What the pi/omp extension relies on, with real processes and real attestation: a process whose
// command line reads `pi` (as pi's does) names its conversation in x-m4a-agent-session; the card
// follows a switch; mail to it while it is not running waits, and a process resuming that
// conversation is its successor and is told of the mail once (notice event "live"). A process that
// is not pi or omp, or a helper under one, cannot name a conversation.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startAgent, type AgentProc } from './support/agent.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';

describe('pi/omp conversations (x-m4a-agent-session)', () => {
  let d: TestDaemon;
  let secret: string;
  const procs: AgentProc[] = [];

  before(async () => {
    d = await startTestDaemon();
    secret = (await d.account('pi')).secret;
    await d.account('alice');
  });
  after(async () => {
    for (const p of procs) await p.exit();
    await d.stop();
  });

  const pi = async (conversation: string | null, title = 'pi'): Promise<AgentProc> => {
    const p = await startAgent(d.url, secret, { env: { M4A_TEST_TITLE: title } });
    procs.push(p);
    if (conversation) await p.call('headers', { 'x-m4a-agent-session': conversation });
    return p;
  };

  it('takes the conversation from a pi process, follows a switch, and keeps mail for it until it resumes', async () => {
    const a = await pi('conv-one');
    const me = (await a.call('/mail/whoami')).body;
    assert.equal(me.card.corroborated.provider, 'pi');
    assert.equal(me.card.corroborated.provider_session_id, 'conv-one');
    await a.call('/mail/status', { alias: 'bee' });

    // /new in pi: the same process, another conversation.
    await a.call('headers', { 'x-m4a-agent-session': 'conv-two' });
    const switched = (await a.call('/mail/whoami')).body;
    assert.equal(switched.session, me.session, 'one process stays one session');
    assert.equal(switched.card.corroborated.provider_session_id, 'conv-two');
    await a.exit();

    // Not running: the mail is kept for it, not refused session_ended.
    const alice = (await d.account('alice2')).client;
    const sent = await alice.send({ to: 'pi/@bee', subject: 'while you were out', body: 'b' });
    assert.equal(sent.redirected, false);
    assert.equal(sent.not_running, true, 'the sender is told the mail waits');

    // `pi --continue` of conv-two: a new process, the successor; told once.
    const b = await pi('conv-two');
    const live = (await b.call('/mail/notice', { event: 'live', wait_secs: 0 })).body;
    assert.deepEqual(
      live.mail.map((m: { subject: string }) => m.subject),
      ['while you were out'],
    );
    assert.equal(live.block, true);
    const again = (await b.call('/mail/notice', { event: 'live', wait_secs: 0 })).body;
    assert.deepEqual(again.mail, [], 'delivered once');
    const whoB = (await b.call('/mail/whoami')).body;
    assert.notEqual(whoB.session, me.session);
    assert.deepEqual(whoB.aliases, ['@bee'], 'the alias passed to the successor');
  });

  it('parks a live notice until new mail comes, and answers at once when it does', async () => {
    const c = await pi('conv-park');
    const addr = (await c.call('/mail/whoami')).body.address as string;
    const parked = c.call('/mail/notice', { event: 'live', wait_secs: 20 });
    const alice = (await d.account('alice3')).client;
    const sent = await alice.send({ to: addr, subject: 'ping', body: 'x' });
    assert.equal(sent.not_running, undefined);
    const n = (await parked).body;
    assert.deepEqual(
      n.mail.map((m: { subject: string }) => m.subject),
      ['ping'],
    );
  });

  it("ignores the header from a helper the agent runs (its bash tool speaks as the agent, with the agent's conversation)", async () => {
    const p = await pi('conv-real');
    await p.call('/mail/whoami'); // the extension speaks first, at session start
    const url = new URL(d.url);
    // Raw HTTP from bash itself (/dev/tcp): the connection is held by the shell, which attestation
    // walks past to the pi process.
    const script = [
      `exec 3<>/dev/tcp/${url.hostname}/${url.port}`,
      `printf 'POST /mail/whoami HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nx-m4a-agent-session: hijacked\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}' "$HOSTPORT" "$TOKEN" >&3`,
      // Read with builtins only: a child (cat) would hold the socket too, and a socket two processes
      // hold is refused as ambiguous.
      'while IFS= read -r line <&3 || [ -n "$line" ]; do printf \'%s\\n\' "$line"; done',
    ].join('\n');
    const out = (await p.call('bash', { script, env: { HOSTPORT: url.host, TOKEN: secret } })).body as string;
    const answer = JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4).trim()) as { session: string; card: { corroborated: { provider_session_id?: string } } };
    const own = (await p.call('/mail/whoami')).body;
    assert.equal(answer.session, own.session, 'the helper speaks as the pi session');
    assert.equal(answer.card.corroborated.provider_session_id, 'conv-real');
    assert.equal(own.card.corroborated.provider_session_id, 'conv-real', 'the helper could not rename it');
  });

  it('ignores the header from a process that is not pi or omp', async () => {
    const x = await pi('conv-forged', 'node-tool');
    const me = (await x.call('/mail/whoami')).body;
    assert.equal(me.card.corroborated.provider, undefined);
    assert.equal(me.card.corroborated.provider_session_id, undefined);
    // And its mail is refused once it is gone: only a pi/omp conversation resumes.
    const addr = me.address as string;
    await x.exit();
    const alice = (await d.account('alice4')).client;
    await assert.rejects(alice.send({ to: addr, subject: 's', body: 'b' }), { code: 'session_ended' });
  });

  it('refuses a malformed conversation id by name and changes nothing', async () => {
    const y = await pi(null);
    const before = (await y.call('/mail/whoami')).body;
    await y.call('headers', { 'x-m4a-agent-session': 'has space' });
    const r = await y.call('/mail/whoami');
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'malformed');
    assert.equal(r.body.error.field, 'x-m4a-agent-session');
    await y.call('headers', {});
    assert.deepEqual((await y.call('/mail/whoami')).body.card.corroborated, before.card.corroborated);
  });
});
