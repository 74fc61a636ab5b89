// `m4a import omp-mail` at the size of a long-used omp-mail directory: one full request (1,000
// sessions with 16 aliases each, 1,000 messages) leaves the daemon answering others while it runs
// (the SQLite store answers synchronously, so the import must give the event loop turns), and a
// registry of 20,000 sessions is read in time linear in its size, its lines still named right.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { IMPORT_LIMITS, type ImportOmpMailRequest } from '../src/wire/import-omp-mail.js';
import { readOmpMailDir } from '../src/cli/omp-mail-files.js';
import { MailError } from '../src/wire/errors.js';

const T0 = Date.UTC(2026, 10, 22, 9, 0, 0);
const ompId = (i: number): string => `019ff696-0000-7000-8000-${String(i).padStart(12, '0')}`;

describe('m4a import omp-mail at scale', () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon();
    await d.account('omp');
  });
  after(() => d.stop());

  it('a full import request leaves the daemon serving other callers while it runs', async (t) => {
    const n = IMPORT_LIMITS.sessions;
    const req: ImportOmpMailRequest = {
      account: 'omp',
      sessions: Array.from({ length: n }, (_, i) => ({
        id: ompId(i),
        slug: `w${i}`,
        aliases: Array.from({ length: IMPORT_LIMITS.aliases }, (_, j) => `w${i}-n${j}`),
        last_seen: T0,
      })),
      messages: Array.from({ length: IMPORT_LIMITS.messages }, (_, i) => ({
        mailbox: ompId(i % n),
        id: `mq-scale-${i}`,
        from: ompId((i + 1) % n),
        subject: `m ${i}`,
        body: 'b'.repeat(100),
        ts: T0 + i,
        delivered: i % 2 === 0,
      })),
    };
    // The longest the event loop went without a turn, and how many other calls were answered.
    let last = performance.now();
    let maxGap = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
    }, 10);
    let done = false;
    let answered = 0;
    const bob = await d.account('bob');
    const other = (async () => {
      while (!done) {
        await bob.client.whoami();
        if (!done) answered++;
      }
    })();
    const t0 = performance.now();
    last = t0;
    try {
      const r = await d.operator.admin.importOmpMail(req);
      assert.deepEqual([r.sessions_created, r.messages_created], [n, IMPORT_LIMITS.messages]);
    } finally {
      done = true;
      clearInterval(timer);
    }
    const ms = performance.now() - t0;
    await other;
    t.diagnostic(`import ${Math.round(ms)} ms; longest event-loop stall ${Math.round(maxGap)} ms; ${answered} whoami calls answered meanwhile`);
    // Unpaced, the messages alone stall it for most of the import (2.4 s of 4 s here); paced, the
    // longest stall is the request's own parsing, a small part of it.
    assert.ok(maxGap < ms / 10, `the event loop stalled ${Math.round(maxGap)} ms of an import of ${Math.round(ms)} ms`);
    assert.ok(answered >= 10, `only ${answered} other calls answered during an import of ${Math.round(ms)} ms`);
  });
});

describe('reading a large agents.json', () => {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  /** A registry as omp-mail writes it (JSON.stringify(registry, null, 2)), 12 lines a session; every
   *  100th slug has a zero-width space, so it is adjusted and its line named. */
  const registry = (n: number, edit?: (reg: Record<string, Record<string, unknown>>) => void): string => {
    const dir = mkdtempSync(join(tmpdir(), 'm4a-omp-registry-'));
    dirs.push(dir);
    const reg = Object.fromEntries(
      Array.from({ length: n }, (_, i) => [
        ompId(i),
        { name: `w${i}`, slug: i % 100 ? `w${i}` : `w\u200b${i}`, aliases: [`a${i}`], cwd: `/home/u/w${i}`, pid: 1000 + i, lastSeen: T0, alive: false, cursor: 0 },
      ]),
    );
    edit?.(reg);
    writeFileSync(join(dir, 'agents.json'), JSON.stringify(reg, null, 2));
    return dir;
  };
  const lineOf = (i: number): number => 2 + 12 * i; // the line of the i-th session's key
  const timed = (dir: string): number => {
    const t0 = performance.now();
    const r = readOmpMailDir(dir);
    const ms = performance.now() - t0;
    assert.equal(r.sessions.length > 0, true);
    return ms;
  };

  it('20,000 sessions take about four times as long as 5,000, not sixteen', (t) => {
    const small = registry(5000);
    const big = registry(20000);
    timed(small); // warm up
    const ms5 = timed(small);
    const ms20 = timed(big);
    t.diagnostic(`5,000 sessions ${Math.round(ms5)} ms, 20,000 sessions ${Math.round(ms20)} ms`);
    assert.ok(ms20 < 10_000, `${Math.round(ms20)} ms`);
    assert.ok(ms20 < 8 * ms5 + 250, `20,000 sessions ${Math.round(ms20)} ms against ${Math.round(ms5)} ms for 5,000`);

    // The lines named are still right, adjusted and refused alike.
    const r = readOmpMailDir(big);
    const slugs = r.adjusted.filter((a) => a.field.endsWith('.slug'));
    assert.equal(slugs.length, 200);
    assert.deepEqual(
      slugs.slice(0, 3).map((a) => [a.field, a.line]),
      [0, 100, 200].map((i) => [`${ompId(i)}.slug`, lineOf(i)]),
    );
    assert.equal(slugs.at(-1)!.line, lineOf(19900));
    const bad = registry(20000, (reg) => {
      reg[ompId(19999)]!.cursor = 'seven';
    });
    assert.throws(
      () => readOmpMailDir(bad),
      (err: unknown) => err instanceof MailError && err.details?.line === lineOf(19999) && /"cursor" must be a number/.test(err.message),
    );
  });
});
