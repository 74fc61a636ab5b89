// A byte-exact SMTP client for the SMTP door's fuzz test (fuzz-smtp.test.ts): it writes whatever
// it is given, keeps every byte the server answered, and checks that each reply line is a
// well-formed RFC 5321 reply (code, "-" or " ", text of tab and printable characters, CRLF).
import { connect, type Socket } from 'node:net';

/** One reply: its code and its lines' text (without the code and separator). */
export interface Reply {
  code: number;
  lines: string[];
}

export class SmtpWire {
  private buf = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  /** Every reply read so far, in order. */
  readonly replies: Reply[] = [];
  closed = false;
  /** Malformed reply lines, as received (latin1), for the property's message. */
  readonly malformed: string[] = [];

  private constructor(readonly socket: Socket) {
    socket.on('data', (c: Buffer) => {
      this.buf = Buffer.concat([this.buf, c]);
      this.parse();
      this.wake();
    });
    socket.on('error', () => undefined);
    socket.once('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  /** Connects, or rejects with the socket error (ECONNREFUSED: the door is gone). */
  static open(port: number): Promise<SmtpWire> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => {
        s.off('error', reject);
        resolve(new SmtpWire(s));
      });
      s.once('error', reject);
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private pending: { code: number; lines: string[] } | null = null;

  private parse(): void {
    for (;;) {
      const end = this.buf.indexOf('\r\n');
      if (end < 0) {
        // A bare LF would be a line end the client must not assume.
        if (this.buf.includes(0x0a)) this.malformed.push(`bare LF in ${JSON.stringify(this.buf.toString('latin1').slice(0, 200))}`);
        return;
      }
      const line = this.buf.subarray(0, end).toString('latin1');
      this.buf = this.buf.subarray(end + 2);
      // RFC 5321 4.2: Reply-code [ ("-" / SP) textstring ]; textstring is HT and 32-126 (UTF-8
      // bytes too, RFC 6531). No other control character, no lone CR.
      const m = /^([2-5][0-5]\d)([ -]?)(.*)$/s.exec(line);
      if (!m || /[\x00-\x08\x0a-\x1f\x7f]/.test(m[3] ?? '') || (m[2] === '' && m[3] !== '')) {
        this.malformed.push(JSON.stringify(line.slice(0, 200)));
        continue;
      }
      const code = Number(m[1]);
      if (this.pending && this.pending.code !== code) this.malformed.push(`a multi-line reply changed its code: ${this.pending.code} then ${JSON.stringify(line.slice(0, 200))}`);
      const p = (this.pending ??= { code, lines: [] });
      p.lines.push(m[3] ?? '');
      if (m[2] !== '-') {
        this.replies.push(p);
        this.pending = null;
      }
    }
  }

  write(data: string | Buffer): void {
    if (!this.socket.destroyed) this.socket.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : data);
  }

  /** Waits until `n` replies have arrived, the server closed, or `ms` passed; false on timeout. */
  async until(n: number, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (this.replies.length < n && !this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
    return true;
  }

  /** Waits for the server to close the connection; false after `ms`. */
  async untilClosed(ms: number): Promise<boolean> {
    return this.until(Number.POSITIVE_INFINITY, ms);
  }

  /** Sends one line (CRLF added) and waits for its reply: the reply, 'closed' or 'timeout'. */
  async say(line: string | Buffer, ms: number): Promise<Reply | 'closed' | 'timeout'> {
    const n = this.replies.length + 1;
    this.write(Buffer.concat([typeof line === 'string' ? Buffer.from(line, 'latin1') : line, Buffer.from('\r\n')]));
    if (!(await this.until(n, ms))) return 'timeout';
    return this.replies[n - 1] ?? 'closed';
  }

  end(): void {
    this.socket.destroy();
  }
}

/** A DATA payload with its lines' leading dots doubled and the final CRLF "." CRLF. */
export function dataOf(message: Buffer): Buffer {
  const stuffed = Buffer.from(message.toString('latin1').replace(/(^|\n)\./g, '$1..'), 'latin1');
  const tail = stuffed.subarray(-2).toString('latin1') === '\r\n' ? '.\r\n' : '\r\n.\r\n';
  return Buffer.concat([stuffed, Buffer.from(tail)]);
}

/** The message ids a `250 2.6.0 Stored as m-a, m-b` reply names, or null for any other reply. */
export function storedIds(r: Reply): string[] | null {
  const m = r.code === 250 ? /^2\.6\.0 Stored as (.+)$/.exec(r.lines.at(-1) ?? '') : null;
  return m ? (m[1] ?? '').split(', ') : null;
}
