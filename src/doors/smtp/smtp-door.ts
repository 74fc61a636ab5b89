// `m4a serve --smtp ADDR:PORT`: the door for e-mail from outside (docs/email.md "Receiving mail").
// smtp-server speaks the protocol; this door refuses what it can before DATA (wrong domain, unknown
// local part, rate), reads the message under the size cap, parses it (parse-mail.ts) and hands it
// to the engine's EmailBook, which decides the account's cap and what is stored. Plain SMTP without
// AUTH or STARTTLS: a loopback port behind the operator's MTA, or a trusted network (--smtp-lan).
// Every refusal is an SMTP reply with an enhanced code and a named error in the log; nothing here
// throws into the daemon.
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Socket } from 'node:net';
import type { EmailBook } from '../../engine/email-book.js';
import type { Logger } from '../../engine/log.js';
import { MailError } from '../../wire/errors.js';
import { parseMail } from './parse-mail.js';
import { SMTP_DEFAULTS, SlidingWindow, type SmtpLimits } from './smtp-limits.js';

export interface SmtpDoorOptions {
  email: Pick<EmailBook, 'recipient' | 'receive'>;
  /** The mail domain (`--mail-domain`): RCPT for any other domain is 550 5.1.2. */
  domain: string;
  log: Logger;
  limits?: Partial<SmtpLimits>;
}

/** A refusal: the reply's code, its text (enhanced code first) and the name it is logged under. */
class Refusal extends Error {
  constructor(
    readonly responseCode: number,
    text: string,
    readonly code: string,
    readonly facts: object = {},
  ) {
    super(text);
  }
}

const secs = (ms: number): number => Math.ceil(ms / 1000);

export class SmtpDoor {
  readonly limits: SmtpLimits;
  private server: SMTPServer;
  private senders: SlidingWindow;
  private recipients: SlidingWindow;
  /** The account each accepted RCPT named (the address objects smtp-server keeps in the envelope). */
  private accounts = new WeakMap<SMTPServerAddress, string>();
  private sockets = new Set<Socket>();
  /** DATA bytes held by every connection together (limits.bufferedBytes). */
  private buffered = 0;

  constructor(private o: SmtpDoorOptions) {
    const maxBytes = o.limits?.maxBytes ?? SMTP_DEFAULTS.maxBytes;
    // At least one message at the cap fits in what all DATA together may hold.
    const bufferedBytes = o.limits?.bufferedBytes ?? Math.max(SMTP_DEFAULTS.bufferedBytes, maxBytes);
    const l = (this.limits = { ...SMTP_DEFAULTS, ...o.limits, maxBytes, bufferedBytes });
    this.senders = new SlidingWindow(l.perSender, l.windowMs);
    this.recipients = new SlidingWindow(l.perRecipient, l.windowMs);
    this.server = new SMTPServer({
      name: o.domain,
      banner: 'mail4agent',
      size: l.maxBytes,
      disabledCommands: ['AUTH', 'STARTTLS'],
      authOptional: true,
      // Our replies carry their enhanced codes in the text (5.1.1, 5.3.4 …): the library would
      // put its own (550 → 5.1.1 for every 550) in front of them.
      hideENHANCEDSTATUSCODES: true,
      disableReverseLookup: true,
      maxClients: l.maxClients,
      maxRecipients: l.maxRecipients,
      socketTimeout: l.idleMs,
      closeTimeout: l.closeMs,
      logger: this.libraryLogger(),
      onMailFrom: (a, s, cb) => this.guard(s, cb, () => this.mailFrom(a)),
      onRcptTo: (a, s, cb) => this.guard(s, cb, () => this.rcptTo(a)),
      onData: (stream, s, cb) => this.data(stream, s, cb),
    });
    this.server.on('error', (err) => o.log.warn({ code: 'smtp_listener_error', err: String(err) }, 'SMTP door: listener error'));
    // A connection lives at most lifetimeMs: the idle timeout alone is reset by every trickled byte.
    this.server.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      const t = setTimeout(() => socket.destroy(), l.lifetimeMs);
      t.unref();
      socket.once('close', () => {
        clearTimeout(t);
        this.sockets.delete(socket);
      });
    });
  }

  /** Open connections (tests). */
  get connections(): number {
    return this.sockets.size;
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const net = this.server.server;
      const fail = (err: Error): void => reject(err);
      net.once('error', fail);
      net.listen(port, host, () => {
        net.off('error', fail);
        const a = net.address();
        resolve(typeof a === 'object' && a ? a.port : port);
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.server.server.listening) return resolve();
      this.server.close(() => resolve());
    });
  }

  /** Runs a MAIL or RCPT check: a Refusal becomes its reply and a log line, anything else 451. */
  private guard(s: SMTPServerSession, cb: (err?: Error | null) => void, check: () => Promise<void> | void): void {
    Promise.resolve()
      .then(check)
      .then(
        () => cb(),
        (err: unknown) => cb(this.refused(err, s)),
      );
  }

  private mailFrom(a: SMTPServerAddress): void {
    const sender = a.address.toLowerCase() || '<>';
    if (!this.senders.take(sender)) {
      const wait = secs(this.senders.wait(sender));
      throw new Refusal(450, `4.7.1 Too many mails from ${sender} in the last ${secs(this.limits.windowMs)} s; try again in ${wait} s`, 'smtp_rate_limited', {
        scope: 'sender',
        sender,
        retry_after: wait,
      });
    }
  }

  private async rcptTo(a: SMTPServerAddress): Promise<void> {
    const address = a.address;
    const domain = address.slice(address.lastIndexOf('@') + 1).toLowerCase();
    if (!address.includes('@') || domain !== this.o.domain.toLowerCase())
      throw new Refusal(550, `5.1.2 This server takes mail for @${this.o.domain} only, not for ${address}`, 'smtp_wrong_domain', { rcpt: address });
    const account = await this.o.email.recipient(address);
    if (!account) throw new Refusal(550, `5.1.1 No mailbox ${address} here: its local part names no account or alias`, 'smtp_unknown_recipient', { rcpt: address });
    // Counted when a mail is stored for it (store()), not here: RCPTs that never send DATA would
    // otherwise close the mailbox to everyone.
    if (this.recipients.wait(account) > 0) {
      const wait = secs(this.recipients.wait(account));
      throw new Refusal(450, `4.7.1 Too many mails to ${address} in the last ${secs(this.limits.windowMs)} s; try again in ${wait} s`, 'smtp_rate_limited', {
        scope: 'recipient',
        rcpt: address,
        account,
        retry_after: wait,
      });
    }
    this.accounts.set(a, account);
  }

  /** DATA: the message read under the cap (bytes past it are read and dropped), then stored. */
  private data(stream: SMTPServerDataStream, s: SMTPServerSession, cb: (err?: Error | null, message?: string) => void): void {
    const max = this.limits.maxBytes;
    let answered = false;
    const answer = (err: Error | null, reply?: string): void => {
      if (answered) return;
      answered = true;
      cb(err, reply);
    };
    let chunks: Buffer[] | null = [];
    let bytes = 0;
    let held = 0;
    let busy = false;
    const release = (): void => {
      this.buffered -= held;
      held = 0;
      chunks = null;
    };
    stream.on('data', (c: Buffer) => {
      bytes += c.length;
      if (!chunks) return;
      if (bytes > max || this.buffered + c.length > this.limits.bufferedBytes) {
        busy = bytes <= max;
        return release(); // the rest is read and dropped: the reply comes after the final dot
      }
      chunks.push(c);
      held += c.length;
      this.buffered += c.length;
    });
    stream.once('error', (err) => {
      release();
      answer(this.refused(err, s));
    });
    stream.once('end', () => {
      if (bytes > max) {
        release();
        return answer(this.refused(new Refusal(552, `5.3.4 Message too big: ${bytes} bytes, this server takes at most ${max}`, 'smtp_too_large', { bytes, limit: max }), s));
      }
      if (busy || !chunks) {
        release();
        return answer(
          this.refused(new Refusal(451, '4.3.1 Too much mail arriving at once; try again in a minute', 'smtp_busy', { bytes, buffered_limit: this.limits.bufferedBytes }), s),
        );
      }
      // Still counted while it is parsed and stored.
      this.store(Buffer.concat(chunks, bytes), s)
        .finally(release)
        .then(
          (reply) => answer(null, reply),
          (err: unknown) => answer(this.refused(err, s)),
        );
    });
  }

  /** Stores the mail for every accepted recipient; the reply is the worst outcome: a temporary
   *  refusal of any recipient refuses the whole mail for now (those stored already are found by
   *  their Message-ID when it comes again), a permanent one only when nothing was stored. */
  private async store(raw: Buffer, s: SMTPServerSession): Promise<string> {
    let parsed: Awaited<ReturnType<typeof parseMail>>;
    try {
      parsed = await parseMail(raw);
    } catch (err) {
      throw new Refusal(554, `5.6.0 The message could not be parsed: ${err instanceof Error ? err.message : String(err)}`, 'smtp_unparseable', { bytes: raw.length });
    }
    const envelopeFrom = s.envelope.mailFrom ? s.envelope.mailFrom.address : '';
    const stored: string[] = [];
    const refusals: Refusal[] = [];
    // One copy per mailbox: two RCPTs reaching one account (an alias beside the name, the name in
    // two cases) store the mail once, as one Message-ID would.
    const done = new Set<string>();
    for (const rcpt of s.envelope.rcptTo) {
      const account = this.accounts.get(rcpt);
      if (!account || done.has(account)) continue;
      done.add(account);
      try {
        const r = await this.o.email.receive({ ...parsed, account, envelopeFrom });
        if (!r.duplicate) this.recipients.take(account);
        stored.push(r.message_id);
      } catch (err) {
        const r = this.asRefusal(err, rcpt.address, account);
        this.logRefusal(r, s); // each recipient's, whichever one the reply names
        refusals.push(r);
      }
    }
    const temporary = refusals.find((r) => r.responseCode < 500);
    if (temporary) throw temporary;
    if (stored.length === 0 && refusals[0]) throw refusals[0];
    return `2.6.0 Stored as ${stored.join(', ')}`;
  }

  /** The engine's refusal of one recipient's mail as an SMTP reply. */
  private asRefusal(err: unknown, rcpt: string, account: string): Refusal {
    if (err instanceof Refusal) return err;
    if (err instanceof MailError) {
      const d = err.details as Record<string, unknown> | undefined;
      switch (err.code) {
        case 'external_cap_reached':
          return new Refusal(452, `4.2.2 Mailbox ${rcpt} is full: it holds ${String(d?.limit)} mails from outside, the most it may`, 'smtp_cap_reached', {
            rcpt,
            account,
            limit: d?.limit,
          });
        case 'unknown_participant':
          return new Refusal(550, `5.1.1 No mailbox ${rcpt} here any more`, 'smtp_unknown_recipient', { rcpt, account });
        case 'malformed':
          return new Refusal(550, `5.1.7 ${err.message}`, 'smtp_bad_sender', { rcpt, account });
        case 'contact_refused':
          return new Refusal(550, `5.7.1 Mailbox ${rcpt} takes no mail from outside`, 'smtp_refused_by_policy', { rcpt, account });
        case 'store_unavailable':
          return new Refusal(451, '4.3.0 The mailbox is unavailable right now; try again later', 'smtp_store_unavailable', { rcpt, account });
      }
    }
    return new Refusal(451, '4.3.0 The mail could not be stored; try again later', 'smtp_failed', {
      rcpt,
      account,
      err: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    });
  }

  /** Any failure as the Error smtp-server answers with (its responseCode and text), logged once. */
  private refused(err: unknown, s: SMTPServerSession): Error {
    const r = err instanceof Refusal ? err : this.asRefusal(err, '', '');
    this.logRefusal(r, s);
    return r;
  }

  private logged = new WeakSet<Refusal>();

  private logRefusal(r: Refusal, s: SMTPServerSession): void {
    if (this.logged.has(r)) return;
    this.logged.add(r);
    const from = s.envelope.mailFrom ? s.envelope.mailFrom.address : undefined;
    this.o.log.warn({ code: r.code, smtp: `${r.responseCode} ${r.message}`, peer: s.remoteAddress, ...(from !== undefined ? { from } : {}), ...r.facts }, 'SMTP door: refused');
  }

  /** smtp-server's own log, read for the refusals it makes by itself (a declared SIZE over the
   *  cap, too many connections or recipients, an idle connection): the rest of its chatter is
   *  dropped. Its replies never carry an enhanced code; ours always do. */
  private libraryLogger(): Record<'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal', (...args: unknown[]) => void> {
    const none = (): void => undefined;
    const sent = (entry: unknown, _msg: unknown, payload: unknown): void => {
      if ((entry as { tnx?: unknown } | null)?.tnx !== 'send' || typeof payload !== 'string') return;
      const m = /^([45]\d\d) (?![45]\.\d)(.*)$/s.exec(payload);
      if (!m) return;
      const [reply, text] = [Number(m[1]), m[2] ?? ''];
      const code =
        reply === 552 && /size/i.test(text)
          ? 'smtp_too_large'
          : /too many connected/i.test(text)
            ? 'smtp_too_many_connections'
            : /too many recipients/i.test(text)
              ? 'smtp_too_many_recipients'
              : /timeout/i.test(text)
                ? 'smtp_idle_timeout'
                : null;
      const line = { code: code ?? 'smtp_protocol_error', smtp: payload.slice(0, 200), cid: (entry as { cid?: unknown }).cid };
      if (code) this.o.log.warn(line, 'SMTP door: refused');
      else this.o.log.debug(line, 'SMTP door: protocol error');
    };
    return { trace: none, debug: sent, info: none, warn: none, error: none, fatal: none };
  }
}
