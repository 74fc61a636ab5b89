// Sending real e-mail (issue #19, docs/email.md "Sending mail"): a real daemon sends to a real
// SMTP server on loopback (test/support/smtp-sink.ts) as its relay. From is the account's own
// address whatever the caller sends; the relay down, then up: sent exactly once; a 550 fails with
// the relay's reason; the 21st send of an hour is rate_limited (and stays so across a restart); a
// reply to mail from outside threads by In-Reply-To; an auto-submitted mail is not answered; the
// relay's credentials come from a 0600 file only.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestDaemon, raw, type TestDaemon } from './support/test-daemon.js';
import { closedPort, startSmtpSink, type SmtpSink } from './support/smtp-sink.js';
import { until } from './support/until.js';
import { serveProcess } from './support/serve-process.js';
import { MailError } from '../src/wire/errors.js';
import type { MailClient } from '../src/client/http-client.js';
import type { InboundMail } from '../src/engine/email-book.js';
import { envNameRefusal, wakeProgramEnv } from '../src/wire/inherited-env.js';
import { classify, relayBackoffMs } from '../src/wake/email-relay.js';
import { parseRelayUrl } from '../src/wake/relay-config.js';
import { attemptId, outboxId, queueId, rateId, readOutbox } from '../src/engine/email-out.js';
import { EMAIL_REC, metaId } from '../src/engine/email-records.js';

const DOMAIN = 'agents.example.com';
// Short backoff: attempts follow each other within a few hundred ms (the tests poll, never time).
const FAST = { baseDelayMs: 40, maxDelayMs: 160, attemptTimeoutMs: 3_000 };

const refusedWith = (code: string) => (err: unknown) => err instanceof MailError && err.code === code;

const dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'm4a-email-out-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function daemon(relayPort: number, extra: Parameters<typeof startTestDaemon>[0] = {}): Promise<TestDaemon> {
  return startTestDaemon({ mailDomain: DOMAIN, smtpRelay: `smtp://127.0.0.1:${relayPort}`, emailRelay: FAST, stream: false, ...extra });
}

async function receiptOf(c: MailClient, id: string) {
  const r = await c.receipts(id);
  assert.equal(r.receipts.length, 1);
  const email = r.receipts[0]?.email;
  assert.ok(email, 'an e-mail receipt');
  return { ...r.receipts[0], email };
}

const inbound = (o: Partial<InboundMail> = {}): InboundMail => ({
  account: 'alice',
  from: 'Bob@Example.com',
  envelopeFrom: 'bob@example.com',
  subject: 'Question',
  text: 'Can you check the build?',
  messageId: '<q1@mail.example.com>',
  inReplyTo: null,
  references: ['<root@mail.example.com>'],
  autoSubmitted: false,
  attachments: [],
  ...o,
});

describe('sending e-mail through the relay', () => {
  let sink: SmtpSink;
  let d: TestDaemon;
  let alice: MailClient;
  let aliceSecret: string;

  it('sends once, From the account at the mail domain, with our Message-ID and Auto-Submitted', async () => {
    sink = await startSmtpSink();
    d = await daemon(sink.port);
    ({ client: alice, secret: aliceSecret } = await d.account('alice'));
    const sent = await alice.send({ to: 'email:Bob@Example.COM', subject: 'Build status', body: 'All green.\nShip it.' });
    assert.equal(sent.from, `alice@${DOMAIN}`);
    assert.equal(sent.to, 'email:bob@example.com');
    const r = await until('accepted by the relay', async () => ((await receiptOf(alice, sent.message_id)).email.state === 'sent' ? receiptOf(alice, sent.message_id) : null));
    assert.equal(r.recipient, 'email:bob@example.com');
    assert.equal(r.email.attempts, 1);
    assert.match(r.email.relay_response ?? '', /^250 .*OK: queued as sink-1/);
    assert.match(r.email.detail, /accepted by the relay.*not known to be delivered/);
    assert.equal(sink.mails.length, 1);
    const m = sink.mails[0]!;
    assert.equal(m.envelopeFrom, `alice@${DOMAIN}`);
    assert.deepEqual(m.envelopeTo, ['bob@example.com']);
    assert.equal(m.headers.get('from'), `alice@${DOMAIN}`);
    assert.equal(m.headers.get('to'), 'bob@example.com');
    assert.equal(m.headers.get('subject'), 'Build status');
    assert.equal(m.headers.get('message-id'), `<${sent.message_id}@${DOMAIN}>`);
    assert.equal(m.headers.get('auto-submitted'), 'auto-generated');
    assert.equal(m.headers.get('in-reply-to'), undefined);
    assert.match(m.body, /All green\.\r\nShip it\./);
  });

  it('takes no From from the caller: a send naming one is malformed and nothing leaves', async () => {
    const before = sink.mails.length;
    const r = await raw(d.url, '/mail/send', {
      token: aliceSecret,
      body: JSON.stringify({ to: 'email:bob@example.com', from: 'ceo@bank.example', subject: 'Wire', body: 'now' }),
    });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.code, 'malformed');
    await assert.rejects(alice.send({ to: 'email:bob@example.com', subject: 'a\r\nBcc: eve@example.com', body: 'x' }), refusedWith('malformed'));
    const ok = await alice.send({ to: 'email:carol@example.com', subject: 'Hi', body: 'x' });
    await until('sent', async () => (await receiptOf(alice, ok.message_id)).email.state === 'sent');
    assert.equal(sink.mails.length, before + 1);
    assert.equal(sink.mails.at(-1)?.headers.get('from'), `alice@${DOMAIN}`);
    assert.equal(sink.mails.at(-1)?.headers.get('bcc'), undefined);
  });

  it('threads a reply to mail from outside (In-Reply-To, References) and refuses to answer an auto-reply', async () => {
    const got = await d.engine.email.receive(inbound());
    const reply = await alice.reply({ message_id: got.message_id, body: 'Checked: green.' });
    assert.equal(reply.to, 'email:bob@example.com');
    assert.equal(reply.from, `alice@${DOMAIN}`);
    await until('the reply sent', async () => (await receiptOf(alice, reply.message_id)).email.state === 'sent');
    const m = sink.mails.at(-1)!;
    assert.equal(m.headers.get('to'), 'bob@example.com');
    assert.equal(m.headers.get('subject'), 'Re: Question');
    assert.equal(m.headers.get('in-reply-to'), '<q1@mail.example.com>');
    assert.equal(m.headers.get('references'), '<root@mail.example.com> <q1@mail.example.com>');
    // Its thread is the inbound mail's.
    assert.equal(reply.thread_id, got.message_id);
    assert.equal((await alice.get(reply.message_id)).message.thread_id, got.message_id);
    // An answer to our mail threads back into the same conversation.
    const back = await d.engine.email.receive(inbound({ messageId: '<q2@mail.example.com>', inReplyTo: `<${reply.message_id}@${DOMAIN}>`, subject: 'Re: Question' }));
    assert.equal((await alice.get(back.message_id)).message.thread_id, got.message_id);

    const auto = await d.engine.email.receive(inbound({ messageId: '<ooo@mail.example.com>', subject: 'Out of office', autoSubmitted: true }));
    const count = sink.mails.length;
    await assert.rejects(alice.reply({ message_id: auto.message_id, body: 'ok' }), refusedWith('auto_submitted'));
    assert.equal(sink.mails.length, count);
  });

  it('answers an idempotent retry with the first send, sent once', async () => {
    const a = await alice.send({ to: 'email:dan@example.com', subject: 'Once', body: 'x', idempotency_key: 'k-1' });
    const b = await alice.send({ to: 'email:dan@example.com', subject: 'Once', body: 'x', idempotency_key: 'k-1' });
    assert.equal(b.message_id, a.message_id);
    assert.equal(b.duplicate, true);
    await assert.rejects(alice.send({ to: 'email:dan@example.com', subject: 'Other', body: 'x', idempotency_key: 'k-1' }), refusedWith('idempotency_conflict'));
    await until('sent', async () => (await receiptOf(alice, a.message_id)).email.state === 'sent');
    assert.equal(sink.mails.filter((m) => m.headers.get('subject') === 'Once').length, 1);
  });

  it('refuses e-mail from a relay delegate (nobody outside would see a delegate wrote it), storing nothing', async () => {
    const account = await d.store.getAccount('alice');
    assert.ok(account);
    const via = { relay: 'relay.example:8443', delegate: 'carol' };
    const head = await d.store.headSeq();
    const sunk = sink.mails.length;
    await assert.rejects(
      d.engine.send({ account, session: null, via }, { to: { kind: 'email', email: 'erin@example.com' }, subject: 'Via', body: 'x' }),
      (err: unknown) => err instanceof MailError && err.code === 'permission_denied' && err.details.need === 'owner',
    );
    assert.equal(await d.store.headSeq(), head, 'nothing stored');
    assert.equal(sink.mails.length, sunk, 'nothing sent');
  });

  it('fails a message the relay refuses with 550, with its reason', async () => {
    await d.stop();
    await sink.close();
    sink = await startSmtpSink({ refuse: (rcpt) => (rcpt === 'nobody@example.com' ? { code: 550, text: 'No such user here' } : null) });
    d = await daemon(sink.port);
    ({ client: alice } = await d.account('alice'));
    const sent = await alice.send({ to: 'email:nobody@example.com', subject: 'Hi', body: 'x' });
    const r = await until('failed', async () => {
      const x = await receiptOf(alice, sent.message_id);
      return x.email.state === 'failed' ? x : null;
    });
    assert.equal(r.email.attempts, 1);
    assert.match(r.email.error ?? '', /the relay refused it: 550.*No such user here/);
    assert.match(r.email.detail, /given up after 1 attempt/);
    assert.ok(r.email.at);
    assert.equal(sink.mails.length, 0);
    await d.stop();
    await sink.close();
  });
});

describe('a relay that is down', () => {
  it('keeps the message queued with its attempts, then sends it once when the relay is up', async () => {
    const port = await closedPort();
    const d = await daemon(port);
    const { client: alice } = await d.account('alice');
    const sent = await alice.send({ to: 'email:bob@example.com', subject: 'Patience', body: 'x' });
    const q = await until('two failed attempts', async () => {
      const x = await receiptOf(alice, sent.message_id);
      return x.email.state === 'queued' && x.email.attempts >= 2 ? x : null;
    });
    assert.ok(q.email.next_attempt_at);
    assert.match(q.email.error ?? '', /ECONNREFUSED|ECONNECTION/);
    assert.match(q.email.detail, /queued: \d+ attempt\(s\) failed/);
    const sink = await startSmtpSink({ port });
    try {
      const r = await until('sent once the relay is up', async () => {
        const x = await receiptOf(alice, sent.message_id);
        return x.email.state === 'sent' ? x : null;
      });
      assert.ok(r.email.attempts >= 3);
      assert.equal(sink.mails.length, 1);
      // Out of the queue once the relay said 250: no attempt follows.
      await until('out of the queue', async () => (await d.store.getRecord(EMAIL_REC.outbox, queueId(sent.message_id))) === null);
      assert.equal(sink.mails.length, 1);
      assert.equal(sink.mails[0]?.headers.get('from'), `alice@${DOMAIN}`);
    } finally {
      await d.stop();
      await sink.close();
    }
  });

  it('resumes a queued message after a restart and sends it once', async () => {
    const port = await closedPort();
    const dataDir = tempDir();
    const d1 = await daemon(port, { dataDir });
    const { secret } = await d1.account('alice');
    const alice1 = (await import('../src/client/http-client.js')).MailClient;
    const c1 = new alice1({ url: d1.url, token: secret });
    const sent = await c1.send({ to: 'email:bob@example.com', subject: 'Durable', body: 'x' });
    await until('an attempt failed', async () => (await receiptOf(c1, sent.message_id)).email.attempts >= 1);
    c1.close();
    await d1.stop();
    const sink = await startSmtpSink({ port });
    const d2 = await daemon(port, { dataDir });
    const c2 = new alice1({ url: d2.url, token: secret });
    try {
      await until('sent after the restart', async () => (await receiptOf(c2, sent.message_id)).email.state === 'sent');
      await until('out of the queue', async () => (await d2.store.getRecord(EMAIL_REC.outbox, queueId(sent.message_id))) === null);
      assert.equal(sink.mails.filter((m) => m.headers.get('subject') === 'Durable').length, 1);
    } finally {
      c2.close();
      await d2.stop();
      await sink.close();
    }
  });
});

describe('the worker on a shared store', () => {
  // Slow enough that the next attempt is at least 200 ms away when one has just failed.
  const SLOW = { baseDelayMs: 400, maxDelayMs: 400, attemptTimeoutMs: 3_000 };

  it('never sends the queued mail of a removed account: failed, and the relay gets nothing', async () => {
    const port = await closedPort();
    const d = await daemon(port);
    const { client: alice } = await d.account('alice');
    const sent = await alice.send({ to: 'email:bob@example.com', subject: 'Orphaned', body: 'x' });
    await until('an attempt failed', async () => (await receiptOf(alice, sent.message_id)).email.attempts >= 1);
    await d.operator.admin.accountRemove('alice');
    const sink = await startSmtpSink({ port });
    try {
      const e = await until('failed', async () => {
        const x = await readOutbox(d.store, sent.message_id);
        return x?.state === 'failed' ? x : null;
      });
      assert.equal(e.last_error, 'the sending account was removed');
      await until('out of the queue', async () => (await d.store.getRecord(EMAIL_REC.outbox, queueId(sent.message_id))) === null);
      assert.equal(sink.mails.length, 0);
    } finally {
      await d.stop();
      await sink.close();
    }
  });

  it('waits for the backoff another daemon set (next_at in the future)', async () => {
    const port = await closedPort();
    const d = await daemon(port, { emailRelay: SLOW });
    const { client: alice } = await d.account('alice');
    const sent = await alice.send({ to: 'email:bob@example.com', subject: 'Later', body: 'x' });
    const e = await until('one failed attempt', async () => {
      const x = await readOutbox(d.store, sent.message_id);
      return x?.attempts === 1 ? x : null;
    });
    // Another daemon's failed attempt pushed the next one an hour out; this one's timer still
    // fires at the old time.
    const now = Date.now();
    await d.store.putRecord({ kind: EMAIL_REC.outbox, id: outboxId(sent.message_id), value: JSON.stringify({ ...e, next_at: now + 3_600_000 }), updatedAt: now });
    const sink = await startSmtpSink({ port });
    try {
      const other = await alice.send({ to: 'email:carol@example.com', subject: 'Now', body: 'x' });
      await until('the other sent', async () => (await readOutbox(d.store, other.message_id))?.state === 'sent');
      await until('the old retry time passed', () => Date.now() > e.next_at + 300);
      assert.deepEqual(
        sink.mails.map((m) => m.headers.get('subject')),
        ['Now'],
      );
      const x = await readOutbox(d.store, sent.message_id);
      assert.equal(x?.state, 'queued');
      assert.equal(x?.attempts, 1);
    } finally {
      await d.stop();
      await sink.close();
    }
  });

  it('adopts a sent outcome recorded in a claim an overwrite hid from the entry, and sends nothing', async () => {
    const port = await closedPort();
    const d = await daemon(port, { emailRelay: SLOW });
    const { client: alice } = await d.account('alice');
    const sent = await alice.send({ to: 'email:bob@example.com', subject: 'Raced', body: 'x' });
    await until('one failed attempt', async () => (await readOutbox(d.store, sent.message_id))?.attempts === 1);
    // Another daemon's attempt 2 was taken by the relay; its entry write lost to an "interrupted".
    const now = Date.now();
    const outcome = { state: 'sent', response: '250 OK: queued elsewhere', at: now };
    await d.store.putRecord({ kind: EMAIL_REC.outbox, id: attemptId(sent.message_id, 2), value: JSON.stringify({ at: now, host: 'other-host', outcome }), updatedAt: now });
    const sink = await startSmtpSink({ port });
    try {
      const x = await until('sent', async () => {
        const v = await readOutbox(d.store, sent.message_id);
        return v?.state === 'sent' ? v : null;
      });
      assert.equal(x.response, '250 OK: queued elsewhere');
      await until('out of the queue', async () => (await d.store.getRecord(EMAIL_REC.outbox, queueId(sent.message_id))) === null);
      assert.equal(sink.mails.length, 0);
      // And a sent entry is not overwritten by a later "interrupted" or retry write.
      assert.equal((await receiptOf(alice, sent.message_id)).email.state, 'sent');
    } finally {
      await d.stop();
      await sink.close();
    }
  });

  it('drops an orphan entry (no message ten minutes on) with its headers and its rate record', async () => {
    const sink = await startSmtpSink();
    const d = await daemon(sink.port, { emailRelay: { ...FAST, rescanMs: 50 } });
    try {
      await d.account('alice');
      const mid = 'orphan-1';
      const at = Date.now() - 11 * 60_000;
      const entry = {
        state: 'queued',
        to: 'bob@example.com',
        from: `alice@${DOMAIN}`,
        account: 'alice',
        created_at: at,
        attempts: 0,
        next_at: at,
        last_error: null,
        response: null,
        done_at: null,
      };
      const rows = [
        {
          kind: EMAIL_REC.meta,
          id: metaId(mid),
          value: JSON.stringify({ message_id: `<${mid}@${DOMAIN}>`, in_reply_to: null, references: [], auto_submitted: false, envelope_from: entry.from, attachments: [] }),
          updatedAt: at,
        },
        { kind: EMAIL_REC.outbox, id: outboxId(mid), value: JSON.stringify(entry), updatedAt: at },
        { kind: EMAIL_REC.rate, id: rateId('alice', at, mid), value: JSON.stringify({ at, key: null }), updatedAt: at },
        { kind: EMAIL_REC.outbox, id: queueId(mid), value: '{}', updatedAt: at },
      ];
      await d.store.insertRecords(rows);
      const left = async () => (await Promise.all(rows.map(async (r) => ((await d.store.getRecord(r.kind, r.id)) ? `${r.kind} ${r.id}` : null)))).filter(Boolean);
      await until('every record of the orphan dropped', async () => (await left()).length === 0);
      assert.equal(sink.mails.length, 0);
    } finally {
      await d.stop();
      await sink.close();
    }
  });
});

describe('the hourly rate', () => {
  it('refuses the 21st send of an hour with retry_after, keeps the count across a restart, and sends nothing for it', async () => {
    const sink = await startSmtpSink();
    const dataDir = tempDir();
    let d = await daemon(sink.port, { dataDir });
    const { client: alice, secret } = await d.account('alice');
    const { client: bob } = await d.account('bob');
    for (let i = 0; i < 20; i++) await alice.send({ to: `email:x${i}@example.com`, subject: `n${i}`, body: 'x', ...(i === 0 ? { idempotency_key: 'first' } : {}) });
    const err = await alice.send({ to: 'email:x20@example.com', subject: 'n20', body: 'x' }).then(
      () => assert.fail('the 21st send went through'),
      (e: unknown) => e,
    );
    assert.ok(refusedWith('rate_limited')(err));
    const details = (err as MailError).details as { retry_after: number; limit: number; scope: string };
    assert.equal(details.limit, 20);
    assert.equal(details.scope, 'email');
    assert.ok(details.retry_after > 3_500 && details.retry_after <= 3_600, `retry_after ${details.retry_after}`);
    // A retry of a send in the window still answers that send.
    assert.equal((await alice.send({ to: 'email:x0@example.com', subject: 'n0', body: 'x', idempotency_key: 'first' })).duplicate, true);
    // Another account has its own hour.
    await bob.send({ to: 'email:y@example.com', subject: 'bob', body: 'x' });
    await until('21 mails at the relay', () => sink.mails.length === 21);
    await d.stop();
    d = await daemon(sink.port, { dataDir, emailPerHour: 20 });
    const { MailClient } = await import('../src/client/http-client.js');
    const again = new MailClient({ url: d.url, token: secret });
    try {
      await assert.rejects(again.send({ to: 'email:x21@example.com', subject: 'n21', body: 'x' }), refusedWith('rate_limited'));
      assert.equal(sink.mails.filter((m) => /^n2\d$/.test(m.headers.get('subject') ?? '')).length, 0);
    } finally {
      again.close();
      await d.stop();
      await sink.close();
    }
  });

  it('--email-per-hour sets it', async () => {
    const sink = await startSmtpSink();
    const d = await daemon(sink.port, { emailPerHour: 2 });
    const { client } = await d.account('alice');
    try {
      await client.send({ to: 'email:a@example.com', subject: '1', body: 'x' });
      await client.send({ to: 'email:a@example.com', subject: '2', body: 'x' });
      await assert.rejects(client.send({ to: 'email:a@example.com', subject: '3', body: 'x' }), refusedWith('rate_limited'));
    } finally {
      await d.stop();
      await sink.close();
    }
  });
});

describe('relay configuration', () => {
  it('uses credentials from a 0600 file and refuses one readable by others', async () => {
    const sink = await startSmtpSink({ auth: { user: 'relay-user', pass: 'pa ss:word' } });
    const dir = tempDir();
    const file = join(dir, 'relay.cred');
    writeFileSync(file, 'relay-user\npa ss:word\n', { mode: 0o600 });
    const d = await daemon(sink.port, { smtpRelayCredentials: file });
    try {
      const { client } = await d.account('alice');
      const sent = await client.send({ to: 'email:bob@example.com', subject: 'Authed', body: 'x' });
      await until('sent', async () => (await receiptOf(client, sent.message_id)).email.state === 'sent');
      assert.equal(sink.mails[0]?.user, 'relay-user');
    } finally {
      await d.stop();
    }
    // Wrong credentials: retried (the operator's to fix), the reason in the receipt.
    writeFileSync(file, 'relay-user\nwrong\n', { mode: 0o600 });
    const d2 = await daemon(sink.port, { smtpRelayCredentials: file });
    try {
      const { client } = await d2.account('alice');
      const sent = await client.send({ to: 'email:bob@example.com', subject: 'Denied', body: 'x' });
      const r = await until('an auth failure', async () => {
        const x = await receiptOf(client, sent.message_id);
        return x.email.attempts >= 1 ? x : null;
      });
      assert.equal(r.email.state, 'queued');
      assert.match(r.email.error ?? '', /refused the credentials/);
    } finally {
      await d2.stop();
      await sink.close();
    }
    chmodSync(file, 0o644);
    await assert.rejects(daemon(sink.port, { smtpRelayCredentials: file, dataDir: tempDir() }), /smtp_credentials_unsafe: .*mode 0644.*chmod 600/);
  });

  it('m4a serve refuses a 0644 credentials file, a URL with credentials, and a relay without a mail domain', async () => {
    const dir = tempDir();
    const file = join(dir, 'relay.cred');
    writeFileSync(file, 'u\np\n', { mode: 0o644 });
    chmodSync(file, 0o644);
    const serve = (args: string[]) =>
      serveProcess(['--data-dir', join(dir, 'data'), '--port', '0', '--no-stream', ...args]).then(
        () => assert.fail('serve started'),
        (e: Error) => e.message,
      );
    assert.match(await serve(['--mail-domain', DOMAIN, '--smtp-relay', 'smtp://127.0.0.1:1', '--smtp-relay-credentials', file]), /smtp_credentials_unsafe/);
    assert.match(await serve(['--mail-domain', DOMAIN, '--smtp-relay', 'smtp://u:p@127.0.0.1:1']), /smtp_relay_invalid: --smtp-relay may not carry credentials/);
    assert.match(await serve(['--smtp-relay', 'smtp://127.0.0.1:1']), /email_unavailable: --smtp-relay needs --mail-domain/);
  });

  it('without a relay, mail to an e-mail address is email_unavailable and stores nothing', async () => {
    const d = await startTestDaemon({ mailDomain: DOMAIN, stream: false });
    try {
      const { client } = await d.account('alice');
      await assert.rejects(client.send({ to: 'email:bob@example.com', subject: 'x', body: 'x' }), refusedWith('email_unavailable'));
      assert.equal((await d.store.tallies(Date.now())).messages, 0);
    } finally {
      await d.stop();
    }
  });

  it('keeps the relay credentials from wake programs, and parses relay URLs strictly', () => {
    assert.ok(envNameRefusal('M4A_SMTP_RELAY_PASSWORD'));
    assert.ok(envNameRefusal('M4A_SMTP_RELAY_USER'));
    const env = wakeProgramEnv({ PATH: '/bin', M4A_SMTP_RELAY_USER: 'u', M4A_SMTP_RELAY_PASSWORD: 'p' }, ['M4A_SMTP_RELAY_PASSWORD', 'M4A_SMTP_RELAY_USER']);
    assert.deepEqual(env, { PATH: '/bin' });
    assert.deepEqual(parseRelayUrl('smtps://relay.example.com'), { host: 'relay.example.com', port: 465, secure: true });
    assert.deepEqual(parseRelayUrl('smtp://relay.example.com'), { host: 'relay.example.com', port: 587, secure: false });
    for (const bad of ['http://x:25', 'smtp://x:25/path', 'smtp://x:25?auth=1', 'not a url']) assert.throws(() => parseRelayUrl(bad), /smtp_relay_invalid/);
  });

  it('backs off exponentially with jitter, capped, and classifies the relay answers', () => {
    assert.equal(
      relayBackoffMs(1, 1000, 60_000, () => 0),
      500,
    );
    assert.equal(
      relayBackoffMs(1, 1000, 60_000, () => 1),
      1000,
    );
    assert.equal(
      relayBackoffMs(4, 1000, 60_000, () => 1),
      8000,
    );
    assert.equal(
      relayBackoffMs(20, 1000, 60_000, () => 1),
      60_000,
    );
    assert.equal(classify({ responseCode: 550, response: '550 no' }).kind, 'failed');
    assert.equal(classify({ responseCode: 451, response: '451 later' }).kind, 'retry');
    assert.equal(classify({ code: 'EAUTH', responseCode: 535, response: '535 bad' }).kind, 'retry');
    assert.equal(classify({ code: 'ECONNECTION', message: 'connect ECONNREFUSED' }).kind, 'retry');
  });
});
