// Where the time and the memory of scenario 5 go: accounts × 8 keep-alive connections from this one
// process, opened in waves, each parked in `inbox --wait` after the head cursor (as
// bench/loadgen/waiters.ts does), against a daemon under --cpu-prof. --door=stream: the same waits
// over the stream door, --per-conn=N of them on each connection (default 8: one connection per
// account; 1: a connection per wait), each connection opened and its hello said by its first wait. Prints each wave's time, the
// daemon's CPU per thread (main, attestation worker, the rest), RSS per parked wait, and the top
// self time of the main thread and of the attestation worker, counted only while waves park.
// --heap: heap snapshots of the daemon before and once everything is parked, the growth by
// constructor; --heap-out=FILE also keeps the second snapshot.
//   node --import tsx bench/probes/waiters-profile.ts [waits=10000] [wave=500] [--door=http|stream] [--per-conn=8]
//     [--no-prof] [--heap | --heap-out=FILE]
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../lib/daemon.js';
import { cleanupAll, sleep, tempDir, waitIdle } from '../lib/procs.js';
import { summarizeProfile } from '../lib/cpuprofile.js';
import { summarizeHeap } from '../lib/heapsnapshot.js';
import { Poster, keepAlive } from '../loadgen/http.js';
import { StreamConn } from '../loadgen/stream-conn.js';
import { NO_STREAM, streamSocket } from '../lib/stream-door.js';

/** CPU seconds of each thread of a process, by tid, with its name. */
function threads(pid: number): Map<number, { name: string; cpu: number }> {
  const out = new Map<number, { name: string; cpu: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const st = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'latin1');
      const name = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), { name, cpu: (Number(f[11]) + Number(f[12])) / 100 });
    } catch {
      /* thread gone */
    }
  }
  return out;
}

const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1] ?? NaN) / 1024;
const monoUs = (): number => Number(process.hrtime.bigint() / 1000n);

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const flag = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const door = flag('door') ?? 'http';
  const perConn = Number(flag('per-conn') ?? (door === 'stream' ? 8 : 1));
  if (door !== 'http' && door !== 'stream') throw new Error('--door=http or --door=stream');
  if (door === 'http' && perConn !== 1) throw new Error('HTTP carries one wait per connection');
  const prof = !process.argv.includes('--no-prof');
  const heapOut = process.argv.find((a) => a.startsWith('--heap-out='))?.slice('--heap-out='.length);
  const heap = heapOut !== undefined || process.argv.includes('--heap');
  const total = Number(args[0] ?? 10_000);
  const waveSize = Number(args[1] ?? 500);
  const dir = tempDir('waiters-prof');
  mkdirSync(join(dir, 'data'));
  const flags = [...(prof ? ['--cpu-prof', '--cpu-prof-dir', join(dir, 'prof')] : []), ...(heap ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`] : [])];
  const d = await startDaemon(join(dir, 'data'), { nodeFlags: flags });
  const ids = Array.from({ length: Math.ceil(total / 8) }, (_, i) => `w${String(i).padStart(5, '0')}`);
  const secrets = await d.accounts([...ids, 'probe'], 8);
  const probe = new Poster(keepAlive(1), d.port, secrets.get('probe'));
  const head = (await probe.json<{ next_cursor: string }>('/mail/inbox', {})).next_cursor;
  const input = { after: head, wait_secs: 60, include_acked: true, limit: 1 };
  const body = JSON.stringify(input);
  // Every wait stays parked until the end: one that settles before is answered early or refused.
  let early = 0;
  let stopping = false;
  const why = new Map<string, number>();
  const settled = (r: unknown): void => {
    if (stopping) return;
    early++;
    const code = r instanceof Error ? ((r as { code?: string }).code ?? r.message.slice(0, 80)) : 'answered';
    why.set(code, (why.get(code) ?? 0) + 1);
  };
  // One function per wait that starts it; a stream connection is opened by its first wait.
  const parks: (() => void)[] = [];
  const closers: (() => void)[] = [];
  const socket = door === 'stream' ? streamSocket(d.dataDir) : null;
  if (door === 'stream' && socket === null) throw new Error(NO_STREAM);
  for (const id of ids) {
    const token = secrets.get(id) as string;
    for (let c = 0; c < 8 && parks.length < total; c += perConn) {
      if (socket === null) {
        const p = new Poster(keepAlive(1), d.port, token);
        parks.push(() => void p.post('/mail/inbox', body, 180_000).then(settled, settled));
        closers.push(() => p.close());
        continue;
      }
      let conn: Promise<StreamConn> | null = null;
      const open = (): Promise<StreamConn> => (conn ??= StreamConn.open(socket, token, 'waiters-profile'));
      for (let j = 0; j < perConn && parks.length < total; j++)
        parks.push(
          () =>
            void open()
              .then((sc) => sc.call('inbox', input, 180_000))
              .then(settled, settled),
        );
      closers.push(
        () =>
          void conn?.then(
            (sc) => sc.close(),
            () => undefined,
          ),
      );
    }
  }
  await waitIdle(d.pid, 10_000);
  let snaps = 0;
  /** A heap snapshot of the daemon (it writes one per SIGUSR2): the path once it is complete. */
  const snapshot = async (): Promise<string> => {
    const want = ++snaps;
    process.kill(d.pid, 'SIGUSR2');
    for (let i = 0; i < 1200; i++) {
      await sleep(100);
      const files = readdirSync(dir)
        .filter((n) => n.endsWith('.heapsnapshot'))
        .sort();
      const f = files.length >= want ? files[want - 1] : undefined;
      if (f === undefined) continue;
      // A size that stays put for 300 ms is a finished file.
      const s1 = statSync(join(dir, f)).size;
      await sleep(300);
      if (s1 > 0 && statSync(join(dir, f)).size === s1) return join(dir, f);
    }
    throw new Error('no heap snapshot written');
  };
  const heapBefore = heap ? summarizeHeap(await snapshot(), 0) : null;
  await sleep(500);
  const rss0 = rssMiB(d.pid);
  const before = threads(d.pid);
  const windows: [number, number][] = [];
  const waves: string[] = [];
  const t0 = Date.now();
  for (let i = 0; i < parks.length; i += waveSize) {
    const w0 = monoUs();
    const cpu0 = threads(d.pid);
    for (const park of parks.slice(i, i + waveSize)) park();
    const idle = await waitIdle(d.pid, 60_000);
    const w1 = monoUs();
    windows.push([w0, w1]);
    const cpu1 = threads(d.pid);
    const byThread = [...cpu1].map(([tid, t]) => ({ tid, cpu: t.cpu - (cpu0.get(tid)?.cpu ?? 0) })).sort((a, b) => b.cpu - a.cpu);
    const main = byThread.find((t) => t.tid === d.pid)?.cpu ?? 0;
    const next = byThread.find((t) => t.tid !== d.pid)?.cpu ?? 0;
    waves.push(`${Math.round((w1 - w0) / 1000)} ms (main ${Math.round(main * 1000)}, busiest other ${Math.round(next * 1000)} ms CPU)${idle ? '' : ' NOT IDLE'}`);
  }
  const parkedMs = Date.now() - t0;
  await sleep(1000);
  const rss1 = rssMiB(d.pid);
  const after = threads(d.pid);
  const out = (s: string): boolean => process.stdout.write(`${s}\n`);
  const conns = door === 'http' ? parks.length : Math.ceil(parks.length / perConn);
  out(
    `${parks.length} parked over ${door} (${conns} connections, ${perConn} waits each) in ${parkedMs} ms (answered early or refused: ${early}${early > 0 ? `: ${[...why].map(([k, n]) => `${k} ${n}`).join(', ')}` : ''})`,
  );
  waves.forEach((w, i) => out(`  wave ${i + 1}: ${w}`));
  out(`RSS ${rss0.toFixed(1)} → ${rss1.toFixed(1)} MiB: +${(rss1 - rss0).toFixed(1)} MiB, ${(((rss1 - rss0) * 1024) / parks.length).toFixed(1)} KiB per parked wait`);
  const cpu = [...after].map(([tid, t]) => ({ tid, name: t.name, cpu: t.cpu - (before.get(tid)?.cpu ?? 0) })).filter((t) => t.cpu > 0.005);
  cpu.sort((a, b) => b.cpu - a.cpu);
  out(`daemon CPU by thread while parking: ${cpu.map((t) => `${t.tid === d.pid ? 'main' : t.name}(${t.tid}) ${t.cpu.toFixed(2)} s`).join(', ')}`);
  if (heap && heapBefore !== null) {
    const file = await snapshot();
    if (heapOut !== undefined) copyFileSync(file, heapOut);
    const h = summarizeHeap(file, 18);
    const delta = (h.totalBytes - heapBefore.totalBytes) / 2 ** 20;
    out(
      `\nheap: ${(heapBefore.totalBytes / 2 ** 20).toFixed(1)} → ${(h.totalBytes / 2 ** 20).toFixed(1)} MiB live (+${delta.toFixed(1)} MiB, ${((delta * 1024) / parks.length).toFixed(1)} KiB per parked wait)`,
    );
    out('growth by constructor: MiB, count, bytes per parked wait');
    const was = new Map(heapBefore.all.map((e) => [e.name, e]));
    const grown = h.all.map((e) => ({ ...e, bytes: e.bytes - (was.get(e.name)?.bytes ?? 0), count: e.count - (was.get(e.name)?.count ?? 0) })).sort((a, b) => b.bytes - a.bytes);
    for (const e of grown.slice(0, 30))
      out(`  ${(e.bytes / 2 ** 20).toFixed(2).padStart(7)}  ${String(e.count).padStart(8)}  ${(e.bytes / parks.length).toFixed(0).padStart(6)}  ${e.name}`);
  }
  stopping = true;
  for (const close of closers) close();
  probe.close();
  await d.stop();
  if (!prof) return;
  // One profile per thread; only the samples inside the waves count.
  const files = readdirSync(join(dir, 'prof'))
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(dir, 'prof', f))
    .sort((a, b) => statSync(b).size - statSync(a).size);
  for (const file of files) {
    const s = summarizeProfile(file, 16, windows);
    if (s.totalMs * (1 - s.idleShare / 100) < 100) continue; // a thread that did next to nothing
    out(`\n${file.slice(file.lastIndexOf('/') + 1)}: ${s.totalMs} ms of waves, idle ${s.idleShare}%`);
    out('charged to the nearest m4a frame:');
    for (const e of s.byOwnCode.slice(0, 14)) out(`  ${e.share.toFixed(1).padStart(5)}%  ${e.name}  ${e.where}`);
    out('top self time:');
    for (const e of s.top.slice(0, 16)) out(`  ${e.share.toFixed(1).padStart(5)}%  ${e.name}  ${e.where}`);
  }
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void cleanupAll().then(() => process.exit()));
