// The SMTP door (docs/email.md "Receiving mail") on a real daemon with a SQLite store: nodemailer
// delivers plain, HTML-only, multipart and attached mail to <account>@<domain> and aliases, each
// read back through the inbox as mail from email:<sender>, from_kind external; a verification
// mail answers an agent's wait_for with its code; refusals (unknown recipient, wrong domain, size,
// rate, cap, connections) are SMTP replies with their codes and named errors in the log, and
// store nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { MailClient } from '../src/client/http-client.js';
import type { MessageOut } from '../src/wire/ops.js';
import { fenceOpen } from '../src/engine/email-fence.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { recordingLogger, type LogLine } from './support/recording-logger.js';
import { until } from './support/until.js';
import { RawSmtp, refusal, smtpPort, transport } from './support/smtp-client.js';

const DOMAIN = 'agents.example.com';
const MiB10 = 10 * 1024 * 1024;

type Item = MessageOut;

/** Every message of the account's inbox, acknowledged or not, oldest first. */
async function all(c: MailClient): Promise<Item[]> {
  return (await c.inbox({ include_acked: true, limit: 200 })).messages;
}

/** A raw RFC 5322 message of exactly `bytes` bytes (CRLF lines), for the size cap. */
function rawOfSize(bytes: number, mid: string): Buffer {
  const head = `From: big@example.org\r\nTo: bob@${DOMAIN}\r\nSubject: big ${mid}\r\nMessage-ID: <${mid}@example.org>\r\nContent-Type: text/plain\r\n\r\n`;
  let room = bytes - Buffer.byteLength(head);
  const lines: string[] = [];
  while (room > 0) {
    const n = Math.min(78, room - 2);
    if (n < 1) {
      lines.push('x'.repeat(room - 2 > 0 ? room - 2 : 0));
      break;
    }
    lines.push('a'.repeat(n));
    room -= n + 2;
  }
  const out = Buffer.from(head + lines.map((l) => `${l}\r\n`).join(''));
  assert.equal(out.length, bytes);
  return out;
}

const logged = (lines: LogLine[], code: string) => lines.filter((l) => (l.obj as { code?: string }).code === code);

describe('SMTP door: delivery into the mailbox', () => {
  const lines: LogLine[] = [];
  let d: TestDaemon;
  let bob: MailClient;
  let carol: MailClient;
  let port: number;
  let mailer: ReturnType<typeof transport>;
  before(async () => {
    d = await startTestDaemon({ log: recordingLogger(lines), mailDomain: DOMAIN, smtp: '127.0.0.1:0', mailAliases: { Support: 'bob' } });
    ({ client: bob } = await d.account('bob'));
    ({ client: carol } = await d.account('carol'));
    await d.account('github', { kind: 'service' });
    port = smtpPort(d.smtpUrl);
    mailer = transport(port);
  });
  after(async () => {
    mailer?.close();
    await d?.stop();
  });

  it('plain text: stored for the account as mail from email:<sender>, external, fenced', async () => {
    const info = await mailer.sendMail({
      from: '"Alice Example" <Alice@Example.ORG>',
      to: `bob@${DOMAIN}`,
      subject: 'Hello from outside',
      text: 'Just a plain note.\nSecond line.',
    });
    assert.match(info.response, /^250 2\.6\.0 Stored as \S+/);
    const m = (await all(bob)).at(-1);
    assert.equal(m?.from, 'email:alice@example.org');
    assert.equal(m?.from_kind, 'external');
    assert.equal(m?.subject, 'Hello from outside');
    assert.ok(m?.body?.includes('Just a plain note.\nSecond line.'), m?.body);
    assert.ok(m?.body?.includes(fenceOpen(m.message_id)), 'the body is fenced as untrusted');
    assert.ok(info.response.includes(m.message_id));
  });

  it('HTML only: converted to text with its links visible, which the engine extracts', async () => {
    const html =
      '<html><head><style>p{color:red}</style><script>alert(1)</script></head><body><p>Hi <b>Bob</b>,</p><p>Please <a href="https://svc.example.org/verify?token=abc">confirm your address</a>.</p><img src="https://svc.example.org/pixel.gif"></body></html>';
    await mailer.sendMail({ from: 'news@svc.example.org', to: `bob@${DOMAIN}`, subject: 'Confirm', html });
    const m = (await all(bob)).at(-1);
    assert.equal(m?.subject, 'Confirm');
    assert.ok(m?.body?.includes('confirm your address [https://svc.example.org/verify?token=abc]'), m?.body);
    for (const gone of ['<p>', 'alert(1)', 'color:red', 'pixel.gif']) assert.ok(!m?.body?.includes(gone), `${gone} left out`);
    const got = await bob.get(m.message_id);
    assert.deepEqual(got.message.links, ['https://svc.example.org/verify?token=abc']);
  });

  it('multipart/alternative: the text part is the body, not the HTML', async () => {
    await mailer.sendMail({ from: 'both@example.org', to: `bob@${DOMAIN}`, subject: 'Alt', text: 'the text part', html: '<p>the <i>html</i> part</p>' });
    const m = (await all(bob)).at(-1);
    assert.ok(m?.body?.includes('the text part'), m?.body);
    assert.ok(!m?.body?.includes('html'), m?.body);
  });

  it('attachments: listed by name, type and size, and their bytes retrievable', async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 3, 255]);
    await mailer.sendMail({
      from: 'files@example.org',
      to: `bob@${DOMAIN}`,
      subject: 'Files',
      text: 'two files attached',
      attachments: [
        { filename: 'notes.txt', content: 'line one\nline two\n', contentType: 'text/plain' },
        { filename: 'logo.png', content: png, contentType: 'image/png' },
      ],
    });
    const m = (await all(bob)).at(-1);
    assert.equal(m?.subject, 'Files');
    const got = await bob.get(m.message_id);
    assert.deepEqual(
      got.message.attachments?.map((a) => [a.n, a.name, a.type, a.size, a.kept]),
      [
        [0, 'notes.txt', 'text/plain', 18, true],
        [1, 'logo.png', 'image/png', png.length, true],
      ],
    );
    const file = await bob.attachment(m.message_id, 1);
    assert.deepEqual(Buffer.from(file.data, 'base64'), png);
  });

  it('an alias and any case of the address reach the account; a verification mail answers wait_for', async () => {
    const n = d.engine.parkedWaits();
    const waiting = bob.waitFor({ from: 'email:noreply@service.example', timeout_secs: 30 });
    await until('the wait_for parks', () => d.engine.parkedWaits() > n);
    await mailer.sendMail({
      from: 'NoReply@Service.Example',
      to: `support@AGENTS.Example.com`,
      subject: 'Your verification code',
      text: 'Your verification code is 482913. It expires in 10 minutes.',
    });
    const r = await waiting;
    assert.equal(r.message?.from, 'email:noreply@service.example');
    assert.equal(r.message?.from_kind, 'external');
    assert.deepEqual(r.codes, ['482913']);
  });

  it('unknown local parts, service accounts and other domains are refused at RCPT, nothing stored', async () => {
    const before = (await all(bob)).length + (await all(carol)).length;
    const count = logged(lines, 'smtp_unknown_recipient').length;
    for (const to of [`nobody@${DOMAIN}`, `github@${DOMAIN}`]) {
      const e = await refusal(mailer.sendMail({ from: 'x@example.org', to, subject: 's', text: 't' }));
      assert.equal(e.responseCode, 550);
      assert.equal(e.command, 'RCPT TO');
      assert.match(e.response ?? '', new RegExp(`^550 5\\.1\\.1 No mailbox ${to} here`));
    }
    assert.equal(logged(lines, 'smtp_unknown_recipient').length, count + 2);
    const e = await refusal(mailer.sendMail({ from: 'x@example.org', to: 'bob@example.net', subject: 's', text: 't' }));
    assert.equal(e.responseCode, 550);
    assert.match(e.response ?? '', /^550 5\.1\.2 This server takes mail for @agents\.example\.com only/);
    assert.equal(logged(lines, 'smtp_wrong_domain').length, 1);
    assert.equal((await all(bob)).length + (await all(carol)).length, before);
  });

  it('several recipients in one mail: each account gets its own copy, and a reply to it threads into each', async () => {
    await mailer.sendMail({ from: 'team@example.org', to: [`bob@${DOMAIN}`, `carol@${DOMAIN}`], subject: 'To you both', text: 'hello both', messageId: '<both@example.org>' });
    const firsts = [];
    for (const c of [bob, carol]) {
      const m = (await all(c)).at(-1);
      assert.equal(m?.subject, 'To you both');
      firsts.push(m?.message_id);
    }
    assert.notEqual(firsts[0], firsts[1]);
    await mailer.sendMail({ from: 'team@example.org', to: [`bob@${DOMAIN}`, `carol@${DOMAIN}`], subject: 'Re: To you both', text: 'again', inReplyTo: '<both@example.org>' });
    for (const [i, c] of [bob, carol].entries()) assert.equal((await all(c)).at(-1)?.reply_to, firsts[i], 'each copy threads into its own account');
  });

  it('regression: one mail to an account under two addresses (its name and an alias, or two cases) is one message', async () => {
    // Found by test/reliability/fuzz-smtp.test.ts (seed 1194446823): without a Message-ID each RCPT
    // stored its own copy, so bob@ and Support@ put the same mail in bob's mailbox twice.
    const before = (await all(bob)).length;
    const info = await mailer.sendMail({
      envelope: { from: 'twice@example.org', to: [`bob@${DOMAIN}`, `Support@${DOMAIN}`, `BOB@${DOMAIN}`, `carol@${DOMAIN}`] },
      raw: `From: twice@example.org\r\nTo: bob@${DOMAIN}\r\nSubject: under two names\r\n\r\nonce please\r\n`,
    });
    const ids = /^250 2\.6\.0 Stored as (.+)$/.exec(info.response)?.[1]?.split(', ') ?? [];
    assert.equal(ids.length, 2, info.response);
    assert.equal((await all(bob)).length, before + 1);
    assert.equal((await all(bob)).at(-1)?.subject, 'under two names');
    assert.equal((await all(carol)).at(-1)?.subject, 'under two names');
  });

  it('threading: In-Reply-To joins the thread; the same Message-ID again is stored once; Auto-Submitted is stored', async () => {
    await mailer.sendMail({ from: 'thread@example.org', to: `carol@${DOMAIN}`, subject: 'Start', text: 'first', messageId: '<t1@example.org>' });
    const first = (await all(carol)).at(-1);
    await mailer.sendMail({
      from: 'thread@example.org',
      to: `carol@${DOMAIN}`,
      subject: 'Re: Start',
      text: 'second',
      inReplyTo: '<t1@example.org>',
      references: ['<t1@example.org>'],
    });
    const second = (await all(carol)).at(-1);
    assert.equal(second?.subject, 'Re: Start');
    assert.equal(second?.thread_id, first?.message_id);
    assert.equal(second?.reply_to, first?.message_id);
    const n = (await all(carol)).length;
    const again = await mailer.sendMail({ from: 'thread@example.org', to: `carol@${DOMAIN}`, subject: 'Start', text: 'first', messageId: '<t1@example.org>' });
    assert.match(again.response, /^250 /);
    assert.equal((await all(carol)).length, n, 'a relay sending again stores nothing new');
    await mailer.sendMail({ from: 'vacation@example.org', to: `carol@${DOMAIN}`, subject: 'Out of office', text: 'I am away', headers: { 'Auto-Submitted': 'auto-replied' } });
    const auto = (await all(carol)).at(-1);
    assert.equal(auto?.subject, 'Out of office');
    assert.equal(auto?.from_kind, 'external');
  });

  it('a message at the 10 MiB cap is accepted; one byte over is 552 5.3.4 and stores nothing', async () => {
    const at = rawOfSize(MiB10, 'at-cap');
    const ok = await mailer.sendMail({ envelope: { from: 'big@example.org', to: `bob@${DOMAIN}` }, raw: at });
    assert.match(ok.response, /^250 2\.6\.0 /);
    const m = (await all(bob)).at(-1);
    assert.equal(m?.subject, 'big at-cap');
    const n = (await all(bob)).length;
    const e = await refusal(mailer.sendMail({ envelope: { from: 'big@example.org', to: `bob@${DOMAIN}` }, raw: rawOfSize(MiB10 + 1, 'over-cap') }));
    assert.equal(e.responseCode, 552);
    assert.match(e.response ?? '', /^552 5\.3\.4 Message too big: 10485761 bytes, this server takes at most 10485760/);
    assert.equal((await all(bob)).length, n);
    assert.equal(logged(lines, 'smtp_too_large').length, 1);
  });

  it('SIZE is announced, and a declared SIZE over it is refused at MAIL FROM (logged)', async () => {
    const s = await RawSmtp.open(port);
    try {
      assert.match(await s.reply(), /^220 /);
      assert.match(await s.say('EHLO test.example'), new RegExp(`^250[- ]SIZE ${MiB10}\\r?$`, 'm'));
      assert.doesNotMatch(await s.say('NOOP'), /STARTTLS|AUTH/);
      assert.match(await s.say(`MAIL FROM:<big@example.org> SIZE=${MiB10 + 1}`), /^552 /);
      await until('the refusal is logged', () => logged(lines, 'smtp_too_large').length === 2);
    } finally {
      s.end();
    }
  });

  it('the daemon stops the listener on shutdown', async () => {
    await d.stop();
    const refused = await new Promise<string>((resolve) => {
      const c = connect(port, '127.0.0.1');
      c.once('connect', () => resolve('connected'));
      c.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    });
    assert.equal(refused, 'ECONNREFUSED');
  });
});

describe('SMTP door: rates, the cap and connections', () => {
  const lines: LogLine[] = [];
  let d: TestDaemon;
  let bob: MailClient;
  let carol: MailClient;
  let port: number;
  let mailer: ReturnType<typeof transport>;
  before(async () => {
    d = await startTestDaemon({
      log: recordingLogger(lines),
      mailDomain: DOMAIN,
      smtp: '127.0.0.1:0',
      smtpLimits: { perSender: 2, perRecipient: 2, maxClients: 3, idleMs: 400 },
      emailCaps: { externalCap: 3 },
    });
    ({ client: bob } = await d.account('bob'));
    ({ client: carol } = await d.account('carol'));
    await d.account('dave');
    port = smtpPort(d.smtpUrl);
    mailer = transport(port);
  });
  after(async () => {
    mailer?.close();
    await d?.stop();
  });

  it('per sender: past the window the next MAIL FROM is 450 4.7.1, logged, nothing stored', async () => {
    for (const i of [1, 2]) await mailer.sendMail({ from: 'chatty@example.org', to: `bob@${DOMAIN}`, subject: `n${i}`, text: 't' });
    const e = await refusal(mailer.sendMail({ from: 'Chatty@example.org', to: `bob@${DOMAIN}`, subject: 'n3', text: 't' }));
    assert.equal(e.responseCode, 450);
    assert.equal(e.command, 'MAIL FROM');
    assert.match(e.response ?? '', /^450 4\.7\.1 Too many mails from chatty@example\.org in the last 60 s; try again in \d+ s/);
    assert.deepEqual(
      (await all(bob)).map((m) => m.subject),
      ['n1', 'n2'],
    );
    assert.equal(logged(lines, 'smtp_rate_limited').length, 1);
  });

  it('per recipient: RCPTs that send no DATA count for nothing; past the stored mails of the window the next RCPT is 450 4.7.1 whoever sends', async () => {
    // bob's window holds his 2 stored mails (n1, n2). RCPTs alone would not have closed it:
    const raw = await RawSmtp.open(port);
    assert.match(await raw.reply(), /^220 /);
    for (const line of ['EHLO x', 'MAIL FROM:<probe1@example.org>', `RCPT TO:<carol@${DOMAIN}>`, 'RSET', 'MAIL FROM:<probe2@example.org>', `RCPT TO:<carol@${DOMAIN}>`, 'RSET'])
      assert.match(await raw.say(line), /^2\d\d[ -]/, line);
    raw.end();
    const e = await refusal(mailer.sendMail({ from: 'fresh@example.org', to: `bob@${DOMAIN}`, subject: 'x', text: 't' }));
    assert.equal(e.responseCode, 450);
    assert.equal(e.command, 'RCPT TO');
    assert.match(e.response ?? '', /^450 4\.7\.1 Too many mails to bob@agents\.example\.com/);
    assert.equal(logged(lines, 'smtp_rate_limited').length, 2);
    await mailer.sendMail({ from: 'fresh@example.org', to: `carol@${DOMAIN}`, subject: 'for carol', text: 't' });
    assert.equal((await all(carol)).at(-1)?.subject, 'for carol', "carol's window is open after RCPTs without DATA");
  });

  it('the cap on stored mail from outside: 452 4.2.2 after DATA, logged, nothing stored', async () => {
    // dave is given the cap of 3 directly (the door's windows do not see those); an SMTP mail is refused.
    for (const n of [1, 2, 3])
      await d.engine.email.receive({
        account: 'dave',
        from: 'direct@example.org',
        envelopeFrom: 'direct@example.org',
        subject: `d${n}`,
        text: 't',
        messageId: null,
        inReplyTo: null,
        references: [],
        autoSubmitted: false,
        attachments: [],
      });
    const e = await refusal(mailer.sendMail({ from: 'third@example.org', to: `dave@${DOMAIN}`, subject: 'd4', text: 't' }));
    assert.equal(e.responseCode, 452);
    assert.match(e.response ?? '', /^452 4\.2\.2 Mailbox dave@agents\.example\.com is full: it holds 3 mails from outside/);
    assert.equal(logged(lines, 'smtp_cap_reached').length, 1);
    // Another account's mail from outside still arrives.
    await mailer.sendMail({ from: 'third@example.org', to: `bob@${DOMAIN}`, subject: 'for bob', text: 't' }).catch(() => null);
    assert.equal((await all(carol)).at(-1)?.subject, 'for carol');
  });

  it('connections are bounded: one over the most is 421, an idle one is closed; HTTP keeps answering', async () => {
    const held = await Promise.all([1, 2, 3].map(() => RawSmtp.open(port)));
    for (const s of held) assert.match(await s.reply(), /^220 /);
    const extra = await RawSmtp.open(port);
    assert.match(await extra.reply(), /^421 .*Too many connected clients/);
    await extra.closed;
    assert.ok((await d.operator.admin.accountList()).accounts.length >= 3, 'the HTTP door answers meanwhile');
    // Idle connections are closed after idleMs (400 ms here).
    await Promise.all(held.map((s) => s.closed));
    await until('the idle closes are logged', () => logged(lines, 'smtp_idle_timeout').length >= 3);
    assert.equal(logged(lines, 'smtp_too_many_connections').length, 1);
    const again = await RawSmtp.open(port);
    assert.match(await again.reply(), /^220 /);
    again.end();
  });

  it('a connection that never stops trickling is cut at its lifetime', async () => {
    const d2 = await startTestDaemon({ mailDomain: DOMAIN, smtp: '127.0.0.1:0', smtpLimits: { idleMs: 1_000, lifetimeMs: 600 } });
    try {
      const s = await RawSmtp.open(smtpPort(d2.smtpUrl));
      assert.match(await s.reply(), /^220 /);
      const t0 = Date.now();
      const tick = setInterval(() => s.socket.write('N'), 100);
      await s.closed;
      clearInterval(tick);
      assert.ok(Date.now() - t0 < 3_000, 'closed at its lifetime, not kept alive by the bytes');
    } finally {
      await d2.stop();
    }
  });
});
