// Sessions are processes: siblings are isolated, successors inherit, ended sessions refuse mail,
// replies to an ended sender reach its account, a forked socket is refused.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MailClient } from '../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { AGENT_SCRIPT, startAgent, type AgentProc } from './support/agent.js';

describe('sessions', () => {
  let d: TestDaemon;
  let codex: MailClient;
  let claudeSecret: string;
  let fakeClaude: string;
  let tmp: string;
  const procs: AgentProc[] = [];

  before(async () => {
    d = await startTestDaemon();
    codex = (await d.account('codex')).client;
    claudeSecret = (await d.account('claude')).secret;
    // An executable named `claude` is what corroboration recognises as Claude Code.
    tmp = mkdtempSync(join(tmpdir(), 'm4a-agent-'));
    writeFileSync(join(tmp, 'package.json'), '{"type":"module"}');
    fakeClaude = join(tmp, 'claude');
    copyFileSync(AGENT_SCRIPT, fakeClaude);
  });
  after(async () => {
    for (const p of procs) await p.exit();
    await d.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  const agent = async (args: string[] = [], script?: string): Promise<AgentProc> => {
    const p = await startAgent(d.url, claudeSecret, { args, ...(script ? { script } : {}) });
    procs.push(p);
    return p;
  };

  it("each process of an account is its own session; a sibling's session mail is unreadable", async () => {
    const one = await agent();
    const two = await agent();
    const w1 = (await one.call('/mail/whoami')).body;
    const w2 = (await two.call('/mail/whoami')).body;
    assert.notEqual(w1.address, w2.address);
    assert.equal(w1.card.attested.pid, one.pid);
    assert.equal(w2.card.attested.pid, two.pid);
    const toOne = await codex.send({ to: w1.address, subject: 'only for one', body: 'secret plan' });
    const toAll = await codex.send({ to: 'claude', subject: 'for the account', body: '' });
    const inbox1 = (await one.call('/mail/inbox', { include_acked: true, limit: 256 })).body.messages.map((m: any) => m.message_id);
    const inbox2 = (await two.call('/mail/inbox', { include_acked: true, limit: 256 })).body.messages.map((m: any) => m.message_id);
    assert.ok(inbox1.includes(toOne.message_id) && inbox1.includes(toAll.message_id));
    assert.ok(!inbox2.includes(toOne.message_id), 'a sibling never sees session mail');
    assert.ok(inbox2.includes(toAll.message_id), 'account mail reaches every session');
    const get2 = await two.call('/mail/get', { message_id: toOne.message_id });
    assert.equal(get2.body.error.code, 'not_addressed_to_you');
    // Account mail is acknowledged once for the whole account, like a shared queue.
    await two.call('/mail/ack', { message_id: toAll.message_id });
    const pending1 = (await one.call('/mail/inbox', { limit: 256 })).body.messages.map((m: any) => m.message_id);
    assert.ok(!pending1.includes(toAll.message_id));
    assert.ok(pending1.includes(toOne.message_id));
    // A from field is refused, never honoured.
    const spoof = await one.call('/mail/send', { to: 'codex', subject: 'x', body: '', from: 'codex' });
    assert.equal(spoof.status, 400);
    assert.equal(spoof.body.error.code, 'malformed');
    assert.equal(spoof.body.error.field, 'from');
    await one.exit();
    await two.exit();
  });

  it("a restarted agent with the same provider session is the successor and reads its predecessor's mail", async () => {
    const first = await agent(['--resume', 'conv-1234'], fakeClaude);
    const me1 = (await first.call('/mail/whoami')).body;
    assert.equal(me1.card.corroborated.provider, 'claude');
    assert.equal(me1.card.corroborated.provider_session_id, 'conv-1234');
    const early = await codex.send({ to: me1.address, subject: 'while you were here', body: '' });
    const mine = (await first.call('/mail/send', { to: 'codex', subject: 'question', body: '?' })).body;
    await first.exit();

    // Between the two processes: the session has ended and has no successor.
    const refused = await codex.send({ to: me1.address, subject: 'too late', body: '' }).catch((e: any) => e);
    assert.equal(refused.code, 'session_ended');
    assert.equal(refused.details.account, 'claude');
    // A reply to the ended session's own message goes to its account, and says so.
    const reply = await codex.send({ to: me1.address, subject: 'Re: question', body: '!', reply_to: mine.message_id });
    assert.equal(reply.to, 'claude');
    assert.equal(reply.redirected, true);

    const second = await agent(['--resume', 'conv-1234'], fakeClaude);
    const me2 = (await second.call('/mail/whoami')).body;
    assert.notEqual(me2.address, me1.address, 'a new process is a new session');
    const seen = (await second.call('/mail/inbox', { include_acked: true, limit: 256 })).body.messages.map((m: any) => m.message_id);
    assert.ok(seen.includes(early.message_id), 'the successor reads mail addressed to its predecessor');
    assert.ok(seen.includes(reply.message_id));
    // Mail to the old address now reaches the successor, and the response says where it went.
    const late = await codex.send({ to: me1.address, subject: 'after restart', body: '' });
    assert.equal(late.to, `claude/${me2.slug}`, "printed short: the lineage's slug");
    assert.equal(late.redirected, true);
    const dir = await codex.directory({ detail: true, include_ended: true });
    const old = dir.accounts.find((a) => a.id === 'claude')!.sessions.find((s) => s.address === me1.address)!;
    assert.equal(old.live, false);
    assert.equal(old.successor, me2.address);
    await second.exit();
  });

  it('ended sessions are pruned from the directory after the retention time; mail stays', async () => {
    const p = await agent();
    const me = (await p.call('/mail/whoami')).body;
    const m = await codex.send({ to: 'claude', subject: 'kept', body: '' });
    await p.exit();
    await d.engine.sweepSessions();
    const listed = (await codex.directory({ detail: true, include_ended: true })).accounts.find((a) => a.id === 'claude')!.sessions.find((s) => s.address === me.address);
    assert.equal(listed?.live, false);
    assert.ok(listed?.ended_at);
    const pruned = await d.engine.store.pruneSessions(Date.now() + 1);
    assert.ok(pruned >= 1);
    assert.equal(
      (await codex.directory({ detail: true, include_ended: true })).accounts.find((a) => a.id === 'claude')!.sessions.find((s) => s.address === me.address),
      undefined,
    );
    assert.ok((await codex.get(m.message_id)).message, 'pruning deletes no mail');
  });

  it('an account bound to a provider refuses other processes', async () => {
    const bound = await d.account('bound', { bind_provider: 'claude' });
    const plain = await startAgent(d.url, bound.secret);
    procs.push(plain);
    const r = await plain.call('/mail/whoami');
    assert.equal(r.status, 403);
    assert.equal(r.body.error.code, 'permission_denied');
    assert.equal(r.body.error.need, 'provider:claude');
    const claudeProc = await startAgent(d.url, bound.secret, { script: fakeClaude });
    procs.push(claudeProc);
    assert.equal((await claudeProc.call('/mail/whoami')).status, 200);
  });

  it('a socket shared by two processes (inherited across fork) is refused as ambiguous', async () => {
    const py = `
import socket, os, sys, time, json
host, port, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection((host, port))
pid = os.fork()
if pid == 0:
    time.sleep(5); os._exit(0)
body = b'{}'
req = b'POST /mail/whoami HTTP/1.1\\r\\nHost: ' + f'{host}:{port}'.encode() + b'\\r\\nAuthorization: Bearer ' + token.encode() + b'\\r\\nContent-Type: application/json\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\n' + body
s.sendall(req)
data = b''
while True:
    chunk = s.recv(65536)
    if not chunk: break
    data += chunk
print(data.split(b'\\r\\n\\r\\n', 1)[1].decode())
os.kill(pid, 9)
`;
    const child = spawn('python3', ['-c', py, '127.0.0.1', String(d.port), claudeSecret], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    await new Promise((r) => child.on('exit', r));
    const body = JSON.parse(out);
    assert.equal(body.error.code, 'unattested');
    assert.equal(body.error.reason, 'ambiguous');
  });
});
