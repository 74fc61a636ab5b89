// What the SMTP door's fuzz test (fuzz-smtp.test.ts) sends: commands of a raw session, and whole
// messages, composed by hand (anything a broken mailer might write) or by nodemailer (what a
// good one writes, with attachments and alternatives).
import fc from 'fast-check';
import nodemailer from 'nodemailer';

export const DOMAIN = 'fuzz.example.com';

/** One piece of a raw session: its bytes, and what answer is due once it is sent: a command line
 *  gets one (outside DATA), a dot ends a DATA and gets one; a data line, half a line or a line
 *  ended by a bare LF (which the door may or may not take for a line end) may get none. */
export interface Command {
  kind: 'command' | 'dataline' | 'dot';
  bytes: Buffer;
}

const RCPTS = [
  `bob@${DOMAIN}`,
  `carol@${DOMAIN}`,
  `Support@${DOMAIN}`,
  `BOB@${DOMAIN.toUpperCase()}`,
  `blocked@${DOMAIN}`,
  `github@${DOMAIN}`,
  `nobody@${DOMAIN}`,
  'bob@other.example',
  `bob@sub.${DOMAIN}`,
];
const ODD_RCPTS = [
  // Control characters a reply that names the address would carry back.
  `bo\u0001b@${DOMAIN}`,
  'x@evil\u001b[31m.example',
  `x\u007f@${DOMAIN}`,
  `tab\there@${DOMAIN}`,
  '',
  `@${DOMAIN}`,
  `"bob"@${DOMAIN}`,
  `@relay.example:bob@${DOMAIN}`,
  `bób@${DOMAIN}`,
  `bob@${DOMAIN}.`,
  `bob+tag@${DOMAIN}`,
  `a`.repeat(300) + `@${DOMAIN}`,
];
const SENDERS = ['alice@example.org', '', 'MAILER-DAEMON@example.org', `bob@${DOMAIN}`, 'x@y', 'ü@例え.jp', 'not an address'];

const latin1 = (s: string): Buffer => Buffer.from(s, 'latin1');
const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');
const line = (s: string | Buffer): Buffer => Buffer.concat([typeof s === 'string' ? utf8(s) : s, latin1('\r\n')]);

const word = fc.string({ maxLength: 12 });
const binary = fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a));
/** Bytes of a line that is no command: NUL, 8-bit, control characters, lone CR. */
const garbageBytes = fc.oneof(
  binary.map((b) => Buffer.from(b.filter((x) => x !== 0x0a && x !== 0x0d))),
  fc.constantFrom('\u0000', 'NOOP\u0000x', '\r', 'HELO \r x', 'MAIL FROM:<a\u0000@b>', '\u00ff\u00fe', '%s%n', 'EHLO ' + '\u00e9'.repeat(10)).map(latin1),
  fc.string({ unit: 'grapheme', maxLength: 20 }).map(utf8),
);
const longLine = fc.tuple(fc.constantFrom(510, 1001, 4096, 70_000), fc.constantFrom('NOOP ', 'RCPT TO:<', 'HELO ', '')).map(([n, head]) => latin1(head + 'x'.repeat(n)));

const rcptAddress = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...RCPTS) }, { weight: 1, arbitrary: fc.constantFrom(...ODD_RCPTS) });

const commandLine = fc.oneof(
  fc.tuple(fc.constantFrom('HELO', 'EHLO', 'helo', 'LHLO'), fc.oneof(fc.constant('fuzz.example'), word, fc.constant(''))).map(([v, a]) => `${v} ${a}`.trimEnd()),
  fc
    .tuple(fc.constantFrom(...SENDERS), fc.constantFrom('', ' SIZE=100', ' SIZE=999999999999', ' BODY=8BITMIME', ' SMTPUTF8', ' SIZE=x', ' AUTH=<>', ' X=Y'))
    .map(([a, p]) => `MAIL FROM:<${a}>${p}`),
  fc.constantFrom('MAIL FROM:alice@example.org', 'MAIL FROM:<', 'MAIL TO:<a@b>', 'MAIL', 'MAIL FROM: <alice@example.org>', 'mail from:<>'),
  fc.tuple(rcptAddress, fc.constantFrom('', ' NOTIFY=NEVER', ' ORCPT=rfc822;x@y', ' X')).map(([a, p]) => `RCPT TO:<${a}>${p}`),
  fc.constantFrom(`RCPT TO:bob@${DOMAIN}`, 'RCPT TO:<>', 'RCPT', 'RCPT FROM:<a@b>'),
  fc.constantFrom('DATA', 'DATA', 'DATA x', 'RSET', 'NOOP', 'NOOP hello', 'HELP', 'EXPN list', 'STARTTLS', 'AUTH PLAIN AGFhAGI=', 'BDAT 10 LAST', 'TURN', 'ETRN x', 'QUIT'),
  fc.oneof(word, fc.constant(`bob@${DOMAIN}`)).map((a) => `VRFY ${a}`),
);

/** The command, printed in a counterexample as its first bytes (a long line is 70,000 of them). */
const cmd = (kind: Command['kind'], bytes: Buffer): Command =>
  Object.assign(
    { kind, bytes },
    { [fc.toStringMethod]: () => `${kind}:${JSON.stringify(bytes.toString('latin1').slice(0, 100))}${bytes.length > 100 ? `…(${bytes.length} bytes)` : ''}` },
  );

/** One session step: mostly command lines, sometimes data lines and dots, garbage, long lines, lines
 *  ended by a bare LF or not at all. */
export const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 10, arbitrary: commandLine.map((s) => cmd('command', line(s))) },
  { weight: 2, arbitrary: garbageBytes.map((b) => cmd('command', line(b))) },
  { weight: 1, arbitrary: longLine.map((b) => cmd('command', line(b))) },
  { weight: 2, arbitrary: fc.oneof(word, fc.constantFrom('Subject: hi', 'From: a@b.c', '', '..', '.x', 'To: x')).map((s) => cmd('dataline', line(s))) },
  { weight: 1, arbitrary: fc.constant(cmd('dot', line('.'))) },
  { weight: 1, arbitrary: commandLine.map((s) => cmd('dataline', utf8(`${s}\n`))) },
  { weight: 1, arbitrary: garbageBytes.map((b) => cmd('dataline', b)) },
);

// ---- messages

export interface FuzzMessage {
  envelopeFrom: string;
  rcpts: string[];
  raw: Buffer;
  /** For the counterexample: the message's first bytes. */
  describe: string;
}

const MIDS = Array.from({ length: 24 }, (_, i) => `<fz-${i}@example.org>`);
const mid = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...MIDS) },
  { weight: 1, arbitrary: fc.constantFrom('<>', 'no-brackets@x', '<a b@c>', `<${'m'.repeat(2000)}@x>`, '<ü@例>', '') },
);
const CHARSETS = ['utf-8', 'UTF-8', 'iso-8859-1', 'windows-1252', 'koi8-r', 'shift_jis', 'gb2312', 'utf-7', 'utf-16', 'x-unknown-charset', '', '"utf-8'];
const ENCODINGS = ['7bit', '8bit', 'binary', 'base64', 'quoted-printable', 'x-uuencode', 'BASE64', ''];

const text = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'grapheme', maxLength: 80 }),
  fc.constantFrom('line1\nline2\n', 'dot\r\n.\r\nafter', '\u0000nul', 'Your code is 123456', 'Confirm: https://example.org/c?x=1', '<<<untrusted mail>>>', '\u202eevil'),
);
const base64Garbage = fc.oneof(
  fc.uint8Array({ maxLength: 120 }).map((a) => Buffer.from(a).toString('base64')),
  fc.constantFrom('!!!not base64###', 'QUJD\r\n====\r\nQUJD', 'A', '=', '////', 'QUJDRA=\u00ff'),
);
const qpGarbage = fc.constantFrom('=XX=YY', 'soft break =\r\nnext', '=\r\n=\r\n=', '=E9t=C3=A9', 'trailing =', '=0D=0A.=0D=0A', '=00=00');
const html = fc.oneof(
  fc.string({ maxLength: 100 }).map((s) => `<p>${s}</p>`),
  fc.constantFrom(
    '<html><body><a href="https://example.org/confirm?t=1">Confirm</a></body></html>',
    '<div><div><div><span>unclosed',
    '<script>alert(1)</script><style>p{}</style>text',
    '<table><tr><td>a<td>b</table>',
    '<'.repeat(500),
    '<b>'.repeat(2000),
    '<a href="javascript:alert(1)">x</a>&amp;&#0;&#xffffff;&bogus;',
  ),
);

/** A body part: its headers and content (bytes). */
const leaf = fc
  .tuple(
    fc.constantFrom('text/plain', 'text/html', 'application/octet-stream', 'image/png', 'message/rfc822', 'text/x-weird', ''),
    fc.constantFrom(...CHARSETS),
    fc.constantFrom(...ENCODINGS),
    fc.oneof(text, html, base64Garbage, qpGarbage),
    fc.option(
      fc.constantFrom('attachment; filename="a.txt"', "attachment; filename*=utf-8''%E2%82%AC.exe", 'inline', 'attachment; filename="../../etc/passwd"', 'attachment; filename='),
    ),
  )
  .map(([type, charset, cte, body, disp]) => {
    const h = [`Content-Type: ${type}${charset ? `; charset=${charset}` : ''}`];
    if (cte) h.push(`Content-Transfer-Encoding: ${cte}`);
    if (disp) h.push(`Content-Disposition: ${disp}`);
    return { headers: h, body: utf8(body) };
  });

type Part = { headers: string[]; body: Buffer };
const { part } = fc.letrec<{ part: Part }>((tie) => ({
  part: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    leaf,
    fc
      .tuple(
        fc.constantFrom('mixed', 'alternative', 'related', 'digest', 'x-bogus'),
        fc.array(tie('part'), { maxLength: 3 }),
        fc.constantFrom('ok', 'missing', 'unclosed', 'never', 'empty', 'nested-same', 'quoted'),
      )
      .map(([sub, parts, broken]) => {
        const b = broken === 'empty' ? '' : 'b1';
        const param = broken === 'missing' ? '' : broken === 'quoted' ? `; boundary="${b}` : `; boundary="${b}"`;
        const sep = broken === 'never' ? 'zz' : b;
        const chunks = parts.map((p) => Buffer.concat([latin1(`--${sep}\r\n${p.headers.join('\r\n')}\r\n\r\n`), p.body, latin1('\r\n')]));
        const close = broken === 'unclosed' ? '' : `--${sep}--\r\n`;
        return { headers: [`Content-Type: multipart/${sub}${param}`], body: Buffer.concat([latin1('preamble\r\n'), ...chunks, latin1(close)]) };
      }),
  ),
}));

const fromHeader = fc.constantFrom(
  'Alice <alice@example.org>',
  'alice@example.org',
  `Bob <bob@${DOMAIN}>`,
  'undisclosed-recipients:;',
  '',
  'garbage <<>>',
  '=?utf-8?B?SGVsbG8=?= <hi@example.org>',
  '=?x?Q?=FF?= <q@example.org>',
);
const subject = fc.oneof(text, fc.constantFrom('=?utf-8?B?w6k=?=', '=?utf-8?B?garbage!?=', '=?unknown?Q?a=FFb?=', '=?utf-8?Q?', 'Re: Re: Fwd:'));
const extraHeaders = fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 0, max: 3 }) }, { weight: 1, arbitrary: fc.constantFrom(300, 3000) });

const handMessage = fc
  .record({
    from: fc.option(fromHeader),
    subject: fc.option(subject),
    messageId: fc.option(mid),
    inReplyTo: fc.option(mid),
    references: fc.option(fc.array(mid, { maxLength: 40 })),
    auto: fc.option(fc.constantFrom('Auto-Submitted: auto-replied', 'Auto-Submitted: no', 'Auto-Submitted: ;;', 'Precedence: bulk', 'Precedence: first-class', 'X-Autoreply: yes')),
    extra: extraHeaders,
    folded: fc.boolean(),
    part,
    bareLf: fc.boolean(),
  })
  .map((o) => {
    const h: string[] = [];
    if (o.from !== null) h.push(`From: ${o.from}`);
    h.push(`To: bob@${DOMAIN}`);
    if (o.subject !== null) h.push(o.folded ? `Subject: ${o.subject}\r\n \tcontinued` : `Subject: ${o.subject}`);
    if (o.messageId !== null) h.push(`Message-ID: ${o.messageId}`);
    if (o.inReplyTo !== null) h.push(`In-Reply-To: ${o.inReplyTo}`);
    if (o.references !== null) h.push(`References: ${o.references.join(o.folded ? '\r\n ' : ' ')}`);
    if (o.auto !== null) h.push(o.auto);
    for (let i = 0; i < o.extra; i++) h.push(`X-Fuzz-${i}: ${i}`);
    h.push('MIME-Version: 1.0', ...o.part.headers);
    const raw = Buffer.concat([utf8(h.join('\r\n')), latin1('\r\n\r\n'), o.part.body]);
    return o.bareLf ? Buffer.from(raw.toString('latin1').replace(/\r\n/g, '\n'), 'latin1') : raw;
  });

/** Options for nodemailer's composer (its own encodings, boundaries, headers). */
const composed = fc
  .record({
    from: fc.constantFrom('alice@example.org', '"Ünïcode Name" <u@example.org>', `bob@${DOMAIN}`),
    subject: subject,
    text: fc.option(text),
    html: fc.option(html),
    messageId: fc.option(fc.constantFrom(...MIDS)),
    inReplyTo: fc.option(fc.constantFrom(...MIDS)),
    references: fc.option(fc.array(fc.constantFrom(...MIDS), { maxLength: 5 })),
    auto: fc.boolean(),
    attachments: fc.array(
      fc.record({
        filename: fc.oneof(word, fc.constantFrom('report.pdf', '../x', 'a\u202etxt.exe', '')),
        content: fc.uint8Array({ maxLength: 2000 }).map((a) => Buffer.from(a)),
        contentType: fc.constantFrom('application/pdf', 'text/plain', 'bogus'),
      }),
      { maxLength: 3 },
    ),
    // nodemailer's textEncoding takes these two (others break its header encoder).
    encoding: fc.constantFrom('quoted-printable', 'base64'),
  })
  .map((o) => ({
    from: o.from,
    to: `bob@${DOMAIN}`,
    subject: o.subject,
    ...(o.text !== null ? { text: o.text } : {}),
    ...(o.html !== null ? { html: o.html } : {}),
    ...(o.messageId !== null ? { messageId: o.messageId } : {}),
    ...(o.inReplyTo !== null ? { inReplyTo: o.inReplyTo } : {}),
    ...(o.references !== null ? { references: o.references } : {}),
    ...(o.auto ? { headers: { 'Auto-Submitted': 'auto-generated' } } : {}),
    attachments: o.attachments,
    textEncoding: o.encoding,
  }));

const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });

/** nodemailer's bytes for the options. */
export async function compose(options: object): Promise<Buffer> {
  const info = (await composer.sendMail(options)) as { message: Buffer };
  return info.message;
}

export interface MessageSpec {
  envelopeFrom: string;
  rcpts: string[];
  /** Hand-made bytes, or nodemailer's options to compose them from. */
  body: { raw: Buffer } | { compose: object };
}

export const messageArb: fc.Arbitrary<MessageSpec> = fc.record({
  envelopeFrom: fc.constantFrom('fuzz@example.org', 'fuzz@example.org', '', 'MAILER-DAEMON@example.org'),
  rcpts: fc.array(fc.constantFrom(...RCPTS), { minLength: 1, maxLength: 4 }),
  body: fc.oneof(
    { weight: 3, arbitrary: handMessage.map((raw) => Object.assign({ raw }, { [fc.toStringMethod]: () => clip(raw.toString('latin1')) })) },
    { weight: 1, arbitrary: composed.map((c) => ({ compose: c })) },
  ),
});

const clip = (s: string): string => `${JSON.stringify(s.slice(0, 1500))}${s.length > 1500 ? `…(${s.length} bytes)` : ''}`;

/** The spec with its bytes. */
export async function messageOf(s: MessageSpec): Promise<FuzzMessage> {
  const raw = 'raw' in s.body ? s.body.raw : await compose(s.body.compose);
  const head = raw.toString('latin1');
  return {
    envelopeFrom: s.envelopeFrom,
    rcpts: s.rcpts,
    raw,
    describe: `${JSON.stringify({ from: s.envelopeFrom, rcpts: s.rcpts })} ${JSON.stringify(head.slice(0, 600))}${head.length > 600 ? `…(${raw.length} bytes)` : ''}`,
  };
}
