// Property tests over the SMTP door (docs/email.md "Receiving mail") on a real daemon with a SQLite
// store. Raw sessions: random command sequences (HELO, EHLO, MAIL, RCPT, DATA, RSET, NOOP, VRFY,
// QUIT, garbage, long lines, NUL, bare LF, 8-bit bytes), one at a time or pipelined in random
// chunks: every reply line well-formed, every command answered or the connection closed within
// its deadline, never a local error. Random messages (threading and auto-submitted headers,
// broken multipart, base64 and quoted-printable garbage, HTML, many headers, odd charsets,
// attachments), composed by hand or by nodemailer, to known and unknown recipients: an accepted
// mail stores exactly one message per accepted mailbox, a refused one stores nothing. Afterwards
// the daemon still answers /health and delivers a plain mail.
// M4A_FUZZ_SMTP_RUNS sets the runs of each property, M4A_FUZZ_SEED the seed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { EMAIL_REC } from '../../src/engine/email-records.js';
import { HTML_BUDGET_MS } from '../../src/doors/smtp/html-text.js';
import { keyOfAccount, type Store } from '../../src/store/types.js';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { recordingLogger, type LogLine } from '../support/recording-logger.js';
import { smtpPort, transport } from '../support/smtp-client.js';
import { tally } from '../support/soak-tally.js';
import { stillClock } from './still-clock.js';
import { SmtpWire, dataOf, storedIds, type Reply } from './smtp-wire.js';
import { commandArb, messageArb, messageOf, DOMAIN, type Command, type FuzzMessage, type MessageSpec } from './smtp-fuzz-values.js';

const NUM_RUNS = Number(process.env.M4A_FUZZ_SMTP_RUNS ?? 0) || undefined;
const runs = (n: number) => ({ numRuns: NUM_RUNS ?? n, includeErrorInReport: true, ...(process.env.M4A_FUZZ_SEED ? { seed: Number(process.env.M4A_FUZZ_SEED) } : {}) });

/** Sessions (or mails) of one run, sent at once. */
const BATCH = 4;
/** A reply (or the close) within this of each command, on a loaded 2-core machine. */
const STEP_MS = 10_000;
/** The reply to a DATA's final dot: an HTML-only mail waits for its conversion, at most
 *  HTML_BUDGET_MS each, behind the others of the batch. */
const DATA_MS = HTML_BUDGET_MS * BATCH + STEP_MS;
/** A whole session's close after its QUIT (which may end an open DATA first). */
const SESSION_MS = DATA_MS + STEP_MS;
const t = tally('smtp');

/** Which account each RCPT local part reaches (support is an alias of bob; github is a service
 *  account, nobody no account: both refused at RCPT; blocked takes no mail from outside). */
const ACCOUNT_OF: Record<string, string> = { bob: 'bob', carol: 'carol', support: 'bob', blocked: 'blocked' };
const accountOf = (rcpt: string): string | null => {
  const at = rcpt.lastIndexOf('@');
  if (rcpt.slice(at + 1).toLowerCase() !== DOMAIN) return null;
  return ACCOUNT_OF[rcpt.slice(0, at).toLowerCase()] ?? null;
};

/** A reply that says the daemon failed: a 421 (the door closes only on shutdown, a timeout or a
 *  connection cap, none of which a fuzz session reaches, or a line too long), a 451 other than "too much mail at once",
 *  or a message the parser could not read (postal-mime reads anything). */
function localError(r: Reply): boolean {
  const text = r.lines.join(' ');
  // smtp-server's own answers before it closes on a client that keeps talking nonsense (a line past
  // its limit, ten unknown commands): refusals, not failures.
  if (r.code === 421) return !['Error: Command line too long', 'Error: too many unrecognized commands'].includes(text);
  if (r.code === 451) return !/^4\.3\.1 /.test(text);
  return r.code === 554 && /^5\.6\.0 /.test(text);
}

describe('fuzz: the SMTP door', () => {
  const lines: LogLine[] = [];
  let d: TestDaemon;
  let store: Store;
  let port: number;
  /** Every message id a Stored reply named: a duplicate names one of these again. */
  const known = new Set<string>();

  /** Errors nothing caught: the daemon runs in this process, so its own land here. */
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown): void => void uncaught.push(err);

  before(async () => {
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUncaught);
    d = await startTestDaemon({
      log: recordingLogger(lines),
      clock: stillClock(),
      timerPollMs: 1,
      mailDomain: DOMAIN,
      smtp: '127.0.0.1:0',
      mailAliases: { support: 'bob' },
      // Rates and caps out of the way: their refusals are tested in email-smtp.test.ts; here every
      // refusal is one the mail itself earned. Small messages: DATA stays fast.
      smtpLimits: { perSender: 1e9, perRecipient: 1e9, maxBytes: 256 * 1024, maxRecipients: 8, idleMs: 30_000 },
      emailCaps: { externalCap: 1e9 },
    });
    await d.account('bob');
    await d.account('carol');
    await d.account('blocked');
    await d.account('github', { kind: 'service' });
    await d.operator.admin.policySet('blocked', 'block_all');
    store = d.engine.store;
    db = new Database(join(d.dataDir, 'mail.db'), { readonly: true, fileMustExist: true });
    port = smtpPort(d.smtpUrl);
  });
  after(async () => {
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUncaught);
    db?.close();
    await d?.stop();
  });

  /** The e-mail records (headers, attachments, Message-ID index), counted in the daemon's SQLite
   *  file: listing them through the store costs more with every mail of a long run. */
  let db: Database.Database;
  const emailRecords = async (): Promise<number> =>
    (db.prepare('SELECT count(*) AS n FROM records WHERE kind IN (?, ?, ?)').get(EMAIL_REC.meta, EMAIL_REC.attachment, EMAIL_REC.byMid) as { n: number }).n;

  /** Connects, counting a refused connection as the daemon gone. */
  async function open(where: string): Promise<SmtpWire> {
    try {
      return await SmtpWire.open(port);
    } catch (err) {
      t.crashes++;
      assert.fail(`${where}: the SMTP door refused the connection: ${String(err)}`);
    }
  }

  /** What the daemon must never show: an uncaught error, an internal failure in its log. */
  function checkDaemon(where: string): void {
    if (uncaught.length > 0) {
      t.crashes++;
      assert.fail(`${where}: an uncaught error: ${String(uncaught[0])}`);
    }
    // The lines logged since the last look (all of them kept would make each look longer).
    const failed = lines.splice(0).find((l) => ['smtp_failed', 'smtp_listener_error', 'smtp_unparseable'].includes((l.obj as { code?: string }).code ?? '') || l.level === 'error');
    if (failed) {
      t.status5xx++;
      assert.fail(`${where}: the daemon logged ${JSON.stringify(failed).slice(0, 600)}`);
    }
  }

  /** What every session must show: well-formed replies, never a local error. */
  function checkReplies(w: SmtpWire, where: string): void {
    assert.deepEqual(w.malformed, [], `${where}: malformed reply lines`);
    const bad = w.replies.find(localError);
    if (bad) {
      t.status5xx++;
      assert.fail(`${where}: a local error: ${bad.code} ${bad.lines.join(' | ')}`);
    }
    checkDaemon(where);
  }

  /** The store moved by exactly the new messages the Stored replies named, each mail from outside;
   *  with none, it did not move at all (no message, no e-mail record). */
  async function checkStored(ids: string[], head: number, records: number, where: string): Promise<string[]> {
    checkDaemon(where);
    // Mails of one batch with one Message-ID name the same message: it is new once.
    const fresh = [...new Set(ids)].filter((id) => !known.has(id));
    for (const id of ids) known.add(id);
    const moved = (await store.headSeq()) - head;
    if (fresh.length === 0 && (moved !== 0 || (await emailRecords()) !== records)) {
      t.changed++;
      assert.fail(`${where}: nothing was stored, yet the store moved ${moved} seqs (e-mail records ${records} → ${await emailRecords()})`);
    }
    assert.equal(moved, fresh.length, `${where}: the store holds exactly the new messages the replies named (${fresh.join(', ')})`);
    for (const id of fresh) {
      const m = await store.getMessage(id);
      assert.equal(m?.fromKind, 'external', `${where}: ${id} is mail from outside`);
    }
    return fresh;
  }

  interface Session {
    commands: Command[];
    pipelined: boolean;
    chunks: number[];
  }

  /** One raw session to its end; the message ids its Stored replies named. */
  async function runSession({ commands, pipelined, chunks }: Session): Promise<string[]> {
    t.requests++;
    const where = `session ${pipelined ? 'pipelined' : 'stepwise'} ${JSON.stringify(commands.map(show)).slice(0, 1500)}`;
    const w = await open(where);
    try {
      if (!(await w.until(1, STEP_MS))) {
        t.hangs++;
        assert.fail(`${where}: no greeting within ${STEP_MS} ms`);
      }
      if (pipelined) {
        // One stream of bytes in random chunk sizes: the door's line parser meets every split.
        const bytes = Buffer.concat(commands.map(bytesOf));
        let at = 0;
        for (const n of chunks) {
          w.write(bytes.subarray(at, at + n));
          at += n;
          await new Promise((r) => setImmediate(r));
        }
        w.write(bytes.subarray(at));
      } else {
        for (const c of commands) {
          if (w.closed) break;
          const sent = w.replies.length;
          // Inside DATA (the last reply a 354) only the final dot is answered; outside it a
          // command line is, and a data line or half a line may not be.
          const inData = w.replies.at(-1)?.code === 354;
          w.write(bytesOf(c));
          if (inData ? c.kind !== 'dot' : c.kind === 'dataline') continue;
          const ms = inData ? DATA_MS : STEP_MS;
          if (!(await w.until(sent + 1, ms))) {
            t.hangs++;
            assert.fail(`${where}: no reply to ${show(c)} within ${ms} ms`);
          }
        }
      }
      // End whatever is open (a DATA) and leave: the server closes within the deadline.
      w.write('\r\n.\r\nQUIT\r\n');
      if (!(await w.untilClosed(SESSION_MS))) {
        t.hangs++;
        assert.fail(`${where}: the connection was neither closed nor answered within ${SESSION_MS} ms (replies: ${JSON.stringify(w.replies.slice(-3))})`);
      }
      checkReplies(w, where);
      return w.replies.flatMap((r) => storedIds(r) ?? []);
    } finally {
      w.end();
    }
  }

  it('raw sessions: random commands one at a time or pipelined, every reply well-formed, never a hang or a local error', async () => {
    const session = fc.record({
      commands: fc.array(commandArb, { minLength: 1, maxLength: 14 }),
      pipelined: fc.boolean(),
      chunks: fc.array(fc.integer({ min: 1, max: 64 }), { maxLength: 6 }),
    });
    // A few sessions at once: the door holds several connections (and their DATA) together, and
    // smtp-server's 100 ms greeting delay is paid once per batch.
    await fc.assert(
      fc.asyncProperty(fc.array(session, { minLength: 1, maxLength: BATCH }), async (batch) => {
        const head = await store.headSeq();
        const records = await emailRecords();
        const ids = (await Promise.all(batch.map(runSession))).flat();
        await checkStored(ids, head, records, `sessions ${batch.map((s) => JSON.stringify(s.commands.map(show)).slice(0, 400)).join(' + ')}`);
      }),
      runs(25),
    );
  });

  /** Sends one message through its own session: MAIL, each RCPT, DATA if any was accepted. */
  async function deliverRaw(m: FuzzMessage, where: string): Promise<{ accepted: string[]; reply: Reply | null }> {
    const w = await open(where);
    try {
      const step = async (line: string | Buffer, what: string, ms = STEP_MS): Promise<Reply> => {
        const r = await w.say(line, ms);
        if (r === 'timeout') {
          t.hangs++;
          assert.fail(`${where}: no reply to ${what} within ${ms} ms`);
        }
        if (r === 'closed') {
          t.crashes++;
          assert.fail(`${where}: the connection closed after ${what}`);
        }
        return r;
      };
      if (!(await w.until(1, STEP_MS))) {
        t.hangs++;
        assert.fail(`${where}: no greeting`);
      }
      assert.equal((await step('EHLO fuzz.example', 'EHLO')).code, 250, `${where}: EHLO`);
      assert.equal((await step(`MAIL FROM:<${m.envelopeFrom}>`, 'MAIL')).code, 250, `${where}: MAIL FROM:<${m.envelopeFrom}>`);
      const accepted: string[] = [];
      for (const rcpt of m.rcpts) if ((await step(`RCPT TO:<${rcpt}>`, `RCPT ${rcpt}`)).code === 250) accepted.push(rcpt);
      let reply: Reply | null = null;
      if (accepted.length > 0) {
        const go = await step('DATA', 'DATA');
        assert.equal(go.code, 354, `${where}: DATA`);
        reply = await step(dataOf(m.raw).subarray(0, -2), 'the final dot', DATA_MS);
      }
      await w.say('QUIT', STEP_MS);
      checkReplies(w, where);
      return { accepted, reply };
    } finally {
      w.end();
    }
  }

  /** The same through nodemailer's SMTP client (a real one: pipelining, its own dot-stuffing). */
  async function deliverNodemailer(m: FuzzMessage, where: string): Promise<{ accepted: string[]; reply: Reply | null }> {
    const mailer = transport(port);
    try {
      const info = (await mailer.sendMail({ envelope: { from: m.envelopeFrom, to: m.rcpts }, raw: m.raw })) as { accepted: string[]; response: string };
      const r = /^(\d{3}) (.*)$/s.exec(info.response);
      return { accepted: info.accepted, reply: r ? { code: Number(r[1]), lines: [r[2] ?? ''] } : null };
    } catch (err) {
      const e = err as { code?: string; responseCode?: number; response?: string; rejected?: string[]; command?: string };
      if (e.code === 'ECONNREFUSED') {
        t.crashes++;
        assert.fail(`${where}: connection refused`);
      }
      if (e.code === 'ETIMEDOUT') {
        t.hangs++;
        assert.fail(`${where}: ${String(err)}`);
      }
      // All recipients refused (EENVELOPE), or DATA refused: which RCPTs were taken is unknown
      // here, so only "refused stores nothing" is checked.
      const r = /^(\d{3}) (.*)$/s.exec(e.response ?? '');
      return { accepted: e.command === 'DATA' || e.command === 'DATA ending' ? ['?'] : [], reply: r ? { code: Number(r[1]), lines: [r[2] ?? ''] } : null };
    } finally {
      mailer.close();
    }
  }

  /** One message delivered; its Stored ids, each checked to be the message of one accepted mailbox. */
  async function runMessage(spec: MessageSpec, via: number): Promise<string[]> {
    t.requests++;
    const m = await messageOf(spec);
    const where = `mail via ${via === 0 ? 'nodemailer' : 'raw DATA'} ${m.describe}`;
    const { accepted, reply } = via === 0 ? await deliverNodemailer(m, where) : await deliverRaw(m, where);
    if (reply && localError(reply)) {
      t.status5xx++;
      assert.fail(`${where}: a local error: ${reply.code} ${reply.lines.join(' ')}`);
    }
    // RCPT: exactly the addresses of a mailbox that exists (not a service account's).
    if (via !== 0) for (const rcpt of m.rcpts) assert.equal(accepted.includes(rcpt), accountOf(rcpt) !== null, `${where}: RCPT ${rcpt}`);
    const ids = reply ? (storedIds(reply) ?? []) : [];
    if (ids.length === 0) return [];
    // Stored: at most one message per accepted mailbox that takes mail from outside, each for one
    // of them. (A mailbox may be left out: its copy refused, say for a From of this domain, while
    // another's Message-ID names a copy stored before, which is taken for this mail.)
    const mailboxes = new Set(accepted.map(accountOf).filter((a): a is string => a !== null && a !== 'blocked'));
    const owners = await Promise.all(ids.map(async (id) => (await store.getMessage(id))?.toKey));
    assert.equal(new Set(owners).size, owners.length, `${where}: one message per mailbox (${ids.join(', ')} for ${owners.join(', ')})`);
    for (const o of owners) assert.ok([...mailboxes].map(keyOfAccount).includes(o ?? ''), `${where}: ${o} is an accepted mailbox (${[...mailboxes].join(', ')})`);
    return ids;
  }

  it('random messages to known and unknown recipients: one message per accepted mailbox, a refused mail stores nothing', async () => {
    const one = fc.tuple(messageArb, fc.integer({ min: 0, max: 9 }));
    await fc.assert(
      fc.asyncProperty(fc.array(one, { minLength: 1, maxLength: BATCH }), async (batch) => {
        const head = await store.headSeq();
        const records = await emailRecords();
        const ids = (await Promise.all(batch.map(([spec, via]) => runMessage(spec, via)))).flat();
        await checkStored(ids, head, records, `mails ${batch.map(([spec]) => JSON.stringify(spec.rcpts)).join(' + ')}`);
      }),
      runs(25),
    );
  });

  it('afterwards the daemon answers /health and delivers a plain mail', async () => {
    const health = await fetch(`${d.url}/health`);
    assert.equal(health.status, 200);
    const mailer = transport(port);
    try {
      const info = await mailer.sendMail({ from: 'after@example.org', to: `carol@${DOMAIN}`, subject: 'after the fuzz', text: 'still here' });
      assert.match(info.response, /^250 2\.6\.0 Stored as \S+/);
      const id = /Stored as (\S+)/.exec(info.response)?.[1] ?? '';
      const m = await store.getMessage(id);
      assert.equal(m?.subject, 'after the fuzz');
      assert.equal(m?.toKey, keyOfAccount('carol'));
    } finally {
      mailer.close();
    }
  });
});

const bytesOf = (c: Command): Buffer => c.bytes;

/** A command for the counterexample: its first bytes, escaped. */
function show(c: Command): string {
  const s = c.bytes.toString('latin1');
  return s.length > 80 ? `${s.slice(0, 80)}…(${s.length} bytes)` : s;
}
