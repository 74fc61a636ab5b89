// A real SMTP server (smtp-server) on loopback standing in for an operator's relay: it keeps every
// mail it accepts with its envelope, headers and the credentials it was given.
import { createServer } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface SunkMail {
  envelopeFrom: string;
  envelopeTo: string[];
  /** Header names in lower case, folded lines joined. */
  headers: Map<string, string>;
  body: string;
  user: string | null;
}

export interface SmtpSink {
  port: number;
  mails: SunkMail[];
  close(): Promise<void>;
}

/** A port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function parse(raw: string): { headers: Map<string, string>; body: string } {
  const end = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, end).replace(/\r\n[ \t]+/g, ' ');
  const headers = new Map<string, string>();
  for (const l of head.split('\r\n')) {
    const i = l.indexOf(':');
    if (i > 0) headers.set(l.slice(0, i).toLowerCase(), l.slice(i + 1).trim());
  }
  return { headers, body: raw.slice(end + 4) };
}

export async function startSmtpSink(
  o: {
    port?: number;
    /** An answer text (with its code) to refuse RCPT TO for that address with. */
    refuse?: (rcpt: string) => { code: number; text: string } | null;
    /** Required credentials; without, AUTH is optional and not checked. */
    auth?: { user: string; pass: string };
  } = {},
): Promise<SmtpSink> {
  const mails: SunkMail[] = [];
  const server = new SMTPServer({
    logger: false,
    disabledCommands: ['STARTTLS'],
    authOptional: !o.auth,
    allowInsecureAuth: true,
    onAuth(auth, _session, cb) {
      if (o.auth && (auth.username !== o.auth.user || auth.password !== o.auth.pass)) return cb(new Error('535 bad credentials'));
      cb(null, { user: auth.username ?? '' });
    },
    onRcptTo(address, _session, cb) {
      const no = o.refuse?.(address.address);
      if (!no) return cb();
      const err = new Error(no.text) as Error & { responseCode: number };
      err.responseCode = no.code;
      cb(err);
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const { headers, body } = parse(Buffer.concat(chunks).toString('utf8'));
        mails.push({
          envelopeFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          envelopeTo: session.envelope.rcptTo.map((r) => r.address),
          headers,
          body,
          user: typeof session.user === 'string' ? session.user : null,
        });
        cb(null, 'OK: queued as sink-1');
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, '127.0.0.1', () => resolve((server.server.address() as { port: number }).port));
  });
  return { port, mails, close: () => new Promise<void>((r) => server.close(() => r())) };
}
