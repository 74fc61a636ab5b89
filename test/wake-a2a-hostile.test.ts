// The a2a step against a hostile remote agent (test/support/a2a-hostile-agent.ts: plain node:http
// speaking A2A's JSON-RPC and SSE) and the real daemon in this process. A remote that appends
// artifact parts forever leaves the daemon's heap bounded (and, without the caps, would not), and
// the result it completes with says what was not kept; a stream past its byte cap ends the round
// and the follower subscribes again later; a remote flipping states is mirrored at most once a
// second and, past the hour's budget, fails our task; a stream of SSE comments alone ends its
// round when no event came in time, and fails our task when the day without a change is over.
// Then, directly: what a round keeps of artifacts, and what a result and a body read of them.
// Bounds are lowered for a run through A2A_LIMITS and put back after it.
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { TaskOut } from '../src/wire/tasks.js';
import type { MailClient } from '../src/client/http-client.js';
import type { Artifact, Part } from '@a2a-js/sdk';
import { A2A_LIMITS } from '../src/wake/a2a-limits.js';
import { ArtifactCollector } from '../src/wake/a2a-artifacts.js';
import { partsText, resultOf } from '../src/wake/a2a-mirror.js';
import { results, startHostileAgent, type Call, type HostileAgent } from './support/a2a-hostile-agent.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

// A full collection before each heap sample: what is measured is what the daemon keeps (what an
// out-of-memory death is made of), not garbage the collector has not reached yet.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heap = (): number => {
  gc();
  return process.memoryUsage().heapUsed;
};

const MiB = 1024 * 1024;
const DEFAULTS = { ...A2A_LIMITS };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Setup {
  d: TestDaemon;
  alice: MailClient;
  remote: HostileAgent;
  task: (id: string) => Promise<TaskOut>;
}

/** A daemon whose account bob forwards tasks to `remote`, and alice who sends them. */
async function setup(handle: (call: Call) => Promise<void>): Promise<Setup> {
  const d = await startTestDaemon();
  const alice = (await d.account('alice')).client;
  await d.account('bob');
  const remote = await startHostileAgent(handle);
  await d.operator.admin.wakeSet({ account: 'bob', steps: [{ kind: 'a2a', url: remote.cardUrl }], debounce_ms: 0 });
  return { d, alice, remote, task: (id) => alice.call<TaskOut>('/task/get', { task_id: id }) };
}

async function teardown(s: Setup | null): Promise<void> {
  await s?.d.stop();
  await s?.remote.close();
}

const create = (s: Setup, instructions: string) => s.alice.call<TaskOut>('/task/create', { to: { kind: 'direct', participant: 'bob' }, title: 'Hostile', instructions });

/** One event frame of ~1 MiB: a text part appended to the one artifact, forever. */
const CHUNK = `chunk ${'x'.repeat(MiB)}`;

/** Streams appends until `stop()`; then the remote completes (GetTask answers too large a task,
 *  as the remote that kept all of it would). Returns the bytes written. */
function appender(): { handle: (call: Call) => Promise<void>; stop: () => void; bytes: () => number } {
  let stopped = false;
  let bytes = 0;
  const handle = async (call: Call): Promise<void> => {
    if (call.method === 'GetTask')
      return call.result({
        id: 'hostile-task',
        contextId: 'hostile-context',
        status: { state: 'TASK_STATE_COMPLETED' },
        artifacts: [{ artifactId: 'big', parts: [{ text: 'y'.repeat(5 * MiB) }] }],
      });
    if (call.method !== 'SendStreamingMessage' && call.method !== 'SubscribeToTask') return call.result({});
    const sse = call.sse();
    await sse.event(results.task('WORKING'));
    const frame = sse.frame(results.appendText('log', CHUNK));
    while (!stopped && (await sse.write(frame))) bytes += frame.length;
    await sse.event(results.status('COMPLETED'));
    sse.end();
  };
  return { handle, stop: () => (stopped = true), bytes: () => bytes };
}

/** Streams appends until `enough` bytes went out (or the heap grew past `stopAbove`), for at most
 *  `ms`, and returns the largest growth of the kept heap, sampled every 250 ms. A volume, not a
 *  time: on a loaded machine 10 s streamed too little for either test to prove anything. */
async function growthWhileAppending(ms: number, enough: number, stopAbove = Infinity): Promise<{ growth: number; streamed: number; s: Setup; done: TaskOut }> {
  const a = appender();
  const s = await setup(a.handle);
  const base = heap();
  let growth = 0;
  const t = await create(s, 'append forever');
  await until('the stream runs', () => a.bytes() > 8 * MiB);
  const end = Date.now() + ms;
  while (Date.now() < end && growth <= stopAbove && a.bytes() < enough) {
    await sleep(250);
    growth = Math.max(growth, heap() - base);
  }
  a.stop();
  const streamed = a.bytes();
  const done = await until(
    'the task completed',
    async () => {
      const x = await s.task(t.task_id);
      return x.state === 'completed' && x;
    },
    30_000,
  );
  return { growth, streamed, s, done };
}

describe('the a2a step against a hostile remote agent', () => {
  let s: Setup | null = null;
  afterEach(async () => {
    Object.assign(A2A_LIMITS, DEFAULTS);
    await teardown(s);
    s = null;
  });

  it('an endless append stream: the kept heap stays bounded, and the result says what was not kept', async (t) => {
    // The stream's own byte cap is lifted: what bounds the heap here is what a round keeps.
    A2A_LIMITS.streamBytes = Infinity;
    const r = await growthWhileAppending(60_000, 200 * MiB);
    s = r.s;
    t.diagnostic(`capped: streamed ${Math.round(r.streamed / MiB)} MiB, the kept heap grew at most ${Math.round(r.growth / MiB)} MiB`);
    assert.ok(r.streamed > 150 * MiB, `the remote streamed ${Math.round(r.streamed / MiB)} MiB (more than the bound, or the test proves nothing)`);
    assert.ok(r.growth < 150 * MiB, `the kept heap grew ${Math.round(r.growth / MiB)} MiB`);
    // GetTask answered more than a body may hold: the result is what the stream gave, within the caps.
    const summary = r.done.result?.summary ?? '';
    assert.match(summary, /^chunk x+… \(\d+ artifact parts not kept: over the limit\)$/);
    assert.ok(Buffer.byteLength(summary) <= 4096, 'within the summary limit');
    assert.equal(r.done.result?.data, undefined);
    assert.deepEqual(
      r.done.history.map((h) => h.state),
      ['submitted', 'working', 'completed'],
    );
  });

  it('without the caps the same stream would grow the heap past that bound', async (t) => {
    Object.assign(A2A_LIMITS, { streamBytes: Infinity, keptBytes: Infinity, keptParts: Infinity, keptArtifacts: Infinity });
    const r = await growthWhileAppending(60_000, Infinity, 150 * MiB);
    s = r.s;
    t.diagnostic(`uncapped: streamed ${Math.round(r.streamed / MiB)} MiB, the kept heap grew ${Math.round(r.growth / MiB)} MiB`);
    assert.ok(r.growth > 150 * MiB, `the kept heap grew ${Math.round(r.growth / MiB)} MiB`);
  });

  it('a stream past its byte cap ends the round; the follower subscribes again after its backoff, the card kept', async () => {
    A2A_LIMITS.streamBytes = 8 * MiB;
    const a = appender();
    s = await setup(a.handle);
    const x = s;
    const t = await create(x, 'append forever');
    const [first, second] = await until(
      'two streams closed by the daemon',
      () => {
        const closed = x.remote.streams.filter((st) => st.closedAt !== null);
        return closed.length >= 2 && closed;
      },
      20_000,
    );
    assert.equal(first!.method, 'SendStreamingMessage');
    assert.equal(second!.method, 'SubscribeToTask');
    // Written, not read: the sockets' buffers hold some past the cap.
    for (const st of [first!, second!]) assert.ok(st.bytes > 8 * MiB && st.bytes < 40 * MiB, `${st.method}: ${Math.round(st.bytes / MiB)} MiB written`);
    assert.ok(second!.openedAt - first!.closedAt! >= 900, 'subscribed again after the backoff');
    assert.equal(x.remote.cardReads, 1, 'the card is not read again: the agent was reachable');
    assert.equal((await x.task(t.task_id)).state, 'working');
    a.stop();
  });

  it("a remote flipping states: at most one mirrored change a second, and past the hour's budget our task fails", async () => {
    A2A_LIMITS.changesPerHour = 5;
    let flips = 0;
    s = await setup(async (call) => {
      if (call.method !== 'SendStreamingMessage') return call.result({});
      const sse = call.sse();
      await sse.event(results.task('SUBMITTED'));
      for (let i = 1; await sse.event(i % 2 ? results.status('WORKING', `step ${i}`) : results.status('INPUT_REQUIRED', `question ${i}?`)); i++) {
        flips++;
        await sleep(20);
      }
    });
    const x = s;
    const t = await create(x, 'flap');
    const failed = await until(
      'the task failed',
      async () => {
        const y = await x.task(t.task_id);
        return y.state === 'failed' && y;
      },
      20_000,
    );
    assert.match(failed.history.at(-1)!.note ?? '', /^the remote agent changed state too often \(more than 5 times in an hour\)/);
    // Five mirrored changes, each one entry (or two: working, then a new question).
    const mirrored = failed.history.slice(1, -1);
    // The remote flips every 20 ms; how often depends on the machine's load, so the check is that
    // it flipped far more often than was mirrored, not a count per second.
    assert.ok(flips >= 5 * mirrored.length, `the remote flipped ${flips} times for ${mirrored.length} mirrored entries`);
    assert.ok(mirrored.length >= 5 && mirrored.length <= 10, `${mirrored.length} entries mirrored`);
    for (let i = 0; i + 2 < mirrored.length; i++) {
      const gap = Date.parse(mirrored[i + 2]!.at) - Date.parse(mirrored[i]!.at);
      assert.ok(gap >= 900, `entries ${i} and ${i + 2} are ${gap} ms apart: two changes within a second`);
    }
    // A change's row is written before its mail (engine/tasks.ts), so the last mail may commit a
    // moment after the state reads failed: wait for it, then check nothing more came.
    const inThread = async () => (await x.alice.inbox({})).messages.filter((m) => m.thread_id === t.thread_id);
    await until('the failure is mail too', async () => (await inThread()).length >= failed.history.length - 1, 5_000);
    await sleep(300);
    assert.equal((await inThread()).length, failed.history.length - 1, 'one mail to the requester per entry, nothing more');
    // Following stopped: the stream closed, and nothing more is asked.
    await until('the stream closed', () => x.remote.streams[0]!.closedAt !== null);
    const calls = x.remote.calls.length;
    await sleep(2_500);
    assert.equal(x.remote.calls.length, calls);
    assert.equal((await x.task(t.task_id)).history.length, failed.history.length);
  });

  /** Opens every stream with the task working, then sends SSE comments only, every 100 ms. */
  const commentsOnly = async (call: Call): Promise<void> => {
    if (call.method !== 'SendStreamingMessage' && call.method !== 'SubscribeToTask') return call.result({});
    const sse = call.sse();
    await sse.event(results.task('WORKING'));
    while (await sse.write(': still here\n\n')) await sleep(100);
  };

  it('a stream of SSE comments alone: the round ends when no event came in time, and the follower subscribes again', async () => {
    A2A_LIMITS.eventIdleMs = 1_000;
    s = await setup(commentsOnly);
    const x = s;
    const t = await create(x, 'keep the socket');
    const closed = await until(
      'two rounds ended',
      () => {
        const c = x.remote.streams.filter((st) => st.closedAt !== null);
        return c.length >= 2 && c;
      },
      15_000,
    );
    assert.deepEqual(
      closed.slice(0, 2).map((st) => st.method),
      ['SendStreamingMessage', 'SubscribeToTask'],
    );
    for (const st of closed.slice(0, 2)) {
      const lived = st.closedAt! - st.openedAt;
      assert.ok(lived >= 900 && lived < 3_000, `${st.method} lived ${lived} ms`);
    }
    assert.equal(x.remote.cardReads, 1, 'the card is not read again');
    assert.equal((await x.task(t.task_id)).state, 'working');
  });

  it('a stream of SSE comments alone fails our task once the day without a change is over, inside the round', async () => {
    A2A_LIMITS.followForMs = 3_000;
    s = await setup(commentsOnly);
    const x = s;
    const t = await create(x, 'keep the socket');
    const failed = await until(
      'the task failed',
      async () => {
        const y = await x.task(t.task_id);
        return y.state === 'failed' && y;
      },
      15_000,
    );
    assert.deepEqual(
      failed.history.map((h) => h.state),
      ['submitted', 'working', 'failed'],
    );
    assert.equal(failed.history[2]!.note, 'no change from the remote agent for 3 s: stopped following its task');
    const after = Date.parse(failed.history[2]!.at) - Date.parse(failed.history[1]!.at);
    assert.ok(after >= 2_900 && after < 6_000, `failed ${after} ms after the last change`);
    await until('the stream closed', () => x.remote.streams[0]!.closedAt !== null);
    assert.equal(x.remote.streams.length, 1, 'in the first round, with no other');
  });
});

const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: { big: 'm'.repeat(1000) }, filename: '', mediaType: 'text/plain' });
const data = (value: unknown): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });
const file: Part = { content: { $case: 'raw', value: Buffer.alloc(1000) }, metadata: undefined, filename: 'f.bin', mediaType: 'application/octet-stream' };
const artifact = (artifactId: string, parts: Part[]): Artifact => ({ artifactId, name: 'n'.repeat(1000), description: '', parts, metadata: undefined, extensions: [] });

describe('what a follower keeps of the artifacts, and what a result reads of them', () => {
  afterEach(() => Object.assign(A2A_LIMITS, DEFAULTS));

  it('keeps within its caps, counts what it drops, and a replaced artifact no longer counts', () => {
    const c = new ArtifactCollector();
    c.add(artifact('a', [text('x'.repeat(3 * MiB))]), false);
    c.add(artifact('a', [text('y'.repeat(3 * MiB))]), false);
    assert.equal(c.note, undefined, 'the replaced 3 MiB no longer counts');
    c.add(artifact('a', [text('z'.repeat(2 * MiB)), file]), true);
    assert.equal(c.note, '(1 artifact part not kept: over the limit)');
    const [kept] = c.artifacts;
    assert.deepEqual(
      kept!.parts.map((p) => p.content?.$case),
      ['text', 'raw'],
    );
    assert.equal(kept!.name, '', 'names and metadata are not kept');
    assert.equal(kept!.parts[0]!.metadata, undefined);
    assert.equal((kept!.parts[1]!.content as { value: Buffer }).value.length, 0, 'a file part is only counted');

    A2A_LIMITS.keptArtifacts = 2;
    A2A_LIMITS.keptParts = 3;
    const d = new ArtifactCollector();
    for (const id of ['a', 'b', 'c']) d.add(artifact(id, [text(id)]), false);
    for (let i = 0; i < 3; i++) d.add(artifact('a', [text(`more ${i}`)]), true);
    assert.deepEqual(
      d.artifacts.map((a) => a.artifactId),
      ['a', 'b'],
    );
    assert.equal(d.artifacts.flatMap((a) => a.parts).length, 3);
    assert.equal(d.note, '(3 artifact parts not kept: over the limit)');
  });

  it('a result reads only what its summary and data can hold, and its notes are always shown', () => {
    const big = Array.from({ length: 20 }, () => text('w'.repeat(MiB)));
    const datas = Array.from({ length: 40 }, (_, i) => data({ i, pad: 'p'.repeat(2000) }));
    const r = resultOf([artifact('a', [...big, ...datas, file])], 'fallback', '(7 artifact parts not kept: over the limit)');
    assert.equal(r?.data, undefined, 'data over 64 KiB is left out');
    assert.match(r?.summary ?? '', /^w+… \(data over 64 KiB not kept\) \(1 file part not kept\) \(7 artifact parts not kept: over the limit\)$/);
    assert.ok(Buffer.byteLength(r!.summary!) <= 4096);
    assert.deepEqual(resultOf([artifact('a', [text('two bugs'), data({ n: 1 }), text('in the parser')])], ''), { summary: 'two bugs in the parser', data: { n: 1 } });
    const body = partsText([text('v'.repeat(MiB)), text('never read')]);
    assert.ok(body.length < 70_000, `${body.length} characters`);
    assert.match(body, /\(the rest not kept: over the limit\)$/);
  });
});
