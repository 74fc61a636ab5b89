// How long a commit holds the event loop, by sync mode: the real SQLite store on a real file in this
// process, `senders` loops that each spend `workUs` of CPU (standing in for parsing and answering a
// request) around an append, for `seconds`. Reports appends/s and the distribution of the time each
// commit's synchronous part took (the transaction, and in 'full' its fsync; any checkpoint SQLite
// runs inside COMMIT shows as the tail).
//   node --import tsx bench/probes/commit-stall.ts [both|<mode>[-inline],…] [seconds=3] [senders=64] [workUs=150]
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { SyncMode } from '../../src/store/sqlite/writer.js';
import { CHECKPOINT_DEFAULTS } from '../../src/store/sqlite/checkpointer.js';
import { keyOfAccount } from '../../src/store/types.js';

const spin = (us: number): void => {
  const end = process.hrtime.bigint() + BigInt(Math.round(us * 1000));
  while (process.hrtime.bigint() < end);
};

const q = (xs: number[], p: number): number => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;

async function run(label: string, seconds: number, senders: number, workUs: number): Promise<string> {
  const mode = label.split('-')[0] as SyncMode;
  const dir = mkdtempSync(join(tmpdir(), 'm4a-stall-'));
  // 'barrier-inline': SQLite checkpoints inside COMMIT as by default, never the checkpoint thread.
  // Otherwise the checkpoint thread from the first commit (the steady state of a busy daemon).
  const checkpoint = { ...CHECKPOINT_DEFAULTS, afterCommits: label.endsWith('-inline') ? Number.MAX_SAFE_INTEGER : 0 };
  const store = openSqliteStore({ path: join(dir, 'mail.db'), sync: mode, checkpoint });
  const commits: number[] = [];
  // Probe only: time the writer's synchronous commit (a private method).
  const w = (store as unknown as { writer: { commitNow: (fn: () => unknown, i: boolean) => unknown } }).writer;
  const orig = w.commitNow.bind(w);
  w.commitNow = (fn, i) => {
    const t = process.hrtime.bigint();
    try {
      return orig(fn, i);
    } finally {
      commits.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  };
  let n = 0;
  const end = Date.now() + seconds * 1000;
  const sender = async (s: number): Promise<void> => {
    while (Date.now() < end) {
      spin(workUs);
      await store.appendMessage(
        {
          id: `m-${s}-${n}-${Math.random().toString(36).slice(2)}`,
          threadId: `t-${s}-${n}`,
          fromAccount: 'probe',
          fromSession: null,
          fromKind: 'agent',
          toAddress: `r${s % 8}`,
          toKey: keyOfAccount(`r${s % 8}`),
          subject: 'stall',
          body: 'x'.repeat(200),
          replyTo: null,
          correlation: null,
          refs: [],
          priority: 'normal',
          createdAt: Date.now(),
          idempotencyKey: `k-${s}-${n}`,
          fingerprint: 'f',
        },
        0,
      );
      n++;
    }
  };
  await Promise.all(Array.from({ length: senders }, (_, s) => sender(s)));
  const st = store.stats();
  const wal = statSync(join(dir, 'mail.db-wal')).size;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  commits.sort((a, b) => a - b);
  const total = commits.reduce((a, b) => a + b, 0);
  return (
    `${label.padEnd(15)} ${Math.round(n / seconds)} appends/s, ${commits.length} commits, loop held by commits ${((total / (seconds * 1000)) * 100).toFixed(1)}% ` +
    `(per commit p50 ${q(commits, 0.5).toFixed(3)} ms, p99 ${q(commits, 0.99).toFixed(3)} ms, max ${q(commits, 1).toFixed(3)} ms); ` +
    `checkpoints ${st.checkpointer}${st.checkpointer === 'worker' ? ` (${st.passes} passes, ${st.catchUps} catch-ups held ${st.heldMs} ms (at most ${st.maxHeldMs}), ${st.restarts} restarts, log at most ${st.maxLogFrames} frames)` : ''}, -wal ${(wal / 2 ** 20).toFixed(1)} MiB`
  );
}

async function main(): Promise<void> {
  const which = process.argv[2] ?? 'both';
  const [seconds, senders, workUs] = [Number(process.argv[3] ?? 3), Number(process.argv[4] ?? 64), Number(process.argv[5] ?? 150)];
  const modes = which === 'both' ? ['full', 'barrier', 'full', 'barrier'] : which.split(',');
  for (const m of modes) process.stdout.write(`${await run(m, seconds, senders, workUs)}\n`);
}

await main();
