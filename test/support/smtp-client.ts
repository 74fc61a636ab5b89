// Talking to the daemon's SMTP door in tests: nodemailer as a real client, and a raw socket for
// what a well-behaved client never sends (a declared SIZE over the cap, idle connections).
import { connect, type Socket } from 'node:net';
import nodemailer from 'nodemailer';

export const smtpPort = (url: string | null): number => Number(/:(\d+)$/.exec(url ?? '')?.[1]);

export function transport(port: number): ReturnType<typeof nodemailer.createTransport> {
  return nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, connectionTimeout: 10_000, socketTimeout: 60_000 });
}

/** What nodemailer's failed send carries: the reply's code and text, and the command refused. */
export interface SmtpFailure {
  responseCode?: number;
  response?: string;
  command?: string;
}

/** The send's failure (the test fails when it succeeds). */
export async function refusal(p: Promise<unknown>): Promise<SmtpFailure> {
  try {
    await p;
  } catch (err) {
    return err as SmtpFailure;
  }
  throw new Error('the send was accepted');
}

/** A raw SMTP conversation: each reply (all its lines) as the server sent it. */
export class RawSmtp {
  private buf = '';
  private waiters: (() => void)[] = [];
  closed: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      this.buf += c;
      for (const w of this.waiters.splice(0)) w();
    });
    socket.on('error', () => undefined);
    this.closed = new Promise((r) => socket.once('close', () => r()));
    void this.closed.then(() => {
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static open(port: number): Promise<RawSmtp> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(new RawSmtp(s)));
      s.once('error', reject);
    });
  }

  /** The next whole reply (its last line is `NNN text`), or '' once the server closed. */
  async reply(): Promise<string> {
    for (;;) {
      const m = /^(?:\d{3}-[^\n]*\n)*\d{3} [^\n]*\n/.exec(this.buf);
      if (m) {
        this.buf = this.buf.slice(m[0].length);
        return m[0].trimEnd();
      }
      if (this.socket.destroyed || this.socket.readableEnded) return '';
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  async say(line: string): Promise<string> {
    this.socket.write(`${line}\r\n`);
    return this.reply();
  }

  end(): void {
    this.socket.destroy();
  }
}
