// One batch of attestations, synchronously: loopback TCP tuples -> client socket inodes
// (/proc/net/tcp{,6}) -> holder pids (/proc/*/fd) -> session processes (ancestor rule) -> session ids
// and corroborated facts. Every connection of a batch shares one read of each /proc/net file and one
// fd scan. A Unix socket's peer comes with its pid from the kernel (SO_PEERCRED): its walk starts
// there, with no /proc/net read and no fd scan. This is blocking /proc work (memory, no disk, but it grows with the host's sockets and
// fds), so the daemon runs it on a worker thread (linux.ts); tests may run it inline.
import { corroborate } from './corroborate.js';
import { FdScanner, type Holder } from './fd-scan.js';
import { readBootId, readFacts, readSmall, readStat } from './proc-facts.js';
import { NetTable, findRows } from './net-table.js';
import { clientRowKeys, type RowLookup } from './proc-net.js';
import { deriveSessionId } from './session-id.js';
import { cliDirsOf, findSession, type WalkContext } from './transparent.js';
import type { AttestResult, ConnectionTuple, PeerQuery, ProcessFacts } from './types.js';

const USER_HZ = 100;
/** Ticks a start time may exceed the accept time by: the two clocks are read apart and rounded. */
const START_SLACK_TICKS = 2;

/** The monotonic clock every thread of the process shares, in ms (PeerQuery.acceptedAtHrMs). */
export const hrMs = (): number => Number(process.hrtime.bigint() / 1000n) / 1000;

/** Time since boot from /proc/uptime (the clock /proc/PID/stat's start times count on), or null. */
function readUptimeMs(): number | null {
  const v = Number((readSmall('/proc/uptime') ?? '').split(' ')[0]);
  return Number.isFinite(v) && v > 0 ? v * 1000 : null;
}

export interface BatchOptions {
  /** Stable id of this host, mixed into every session id. */
  hostId: string;
  /** Root of this package: its CLI (`dist/cli/`, `src/cli/`) is transparent. */
  packageRoot: string;
  /** Other uids whose processes may be attested besides the daemon's own. */
  allowedUids?: number[];
}

export interface BatchStats {
  /** Reads of /proc/net/tcp or /proc/net/tcp6 (each file counts once). */
  netScans: number;
  /** Scans of /proc/*\/fd. */
  fdScans: number;
}

export interface BatchAttestor {
  /** Results for `conns`, then for `peers`, in order. */
  run(conns: ConnectionTuple[], peers?: PeerQuery[]): AttestResult[];
  stats(): BatchStats;
}

export function createBatchAttestor(opts: BatchOptions): BatchAttestor {
  const selfPid = process.pid;
  const selfUid = process.getuid?.() ?? -1;
  const allowed = new Set(opts.allowedUids ?? []);
  const ctx: WalkContext = { cliDirs: cliDirsOf(opts.packageRoot) };
  const bootId = readBootId();
  const scanner = new FdScanner(selfPid);
  const table = new NetTable();
  let netScans = 0;

  /** The rows of `keys` in /proc/net/<file>; none when it cannot be read (no IPv6 in this kernel). */
  function lookUp(file: 'tcp' | 'tcp6', keys: string[]): Map<string, RowLookup> {
    netScans++;
    return table.read(`/proc/net/${file}`) ? findRows(table.bytes, keys) : new Map<string, RowLookup>();
  }

  function attestBatch(conns: ConnectionTuple[]): AttestResult[] {
    // 1. Client rows: /proc/net/tcp first; tcp6 only for what tcp did not settle.
    const keys = conns.map(clientRowKeys);
    const rows: RowLookup[] = conns.map(() => null);
    const v4 = keys.flatMap((k) => (k.tcp !== undefined ? [k.tcp] : []));
    if (v4.length > 0) {
      const found = lookUp('tcp', v4);
      keys.forEach((k, i) => {
        if (k.tcp !== undefined) rows[i] = found.get(k.tcp) ?? null;
      });
    }
    const unsettled = (i: number) => rows[i] === null || rows[i] === 'closed';
    const v6 = keys.flatMap((k, i) => (k.tcp6 !== undefined && unsettled(i) ? [k.tcp6] : []));
    if (v6.length > 0) {
      const found = lookUp('tcp6', v6);
      keys.forEach((k, i) => {
        if (k.tcp6 === undefined || !unsettled(i)) return;
        const r6 = found.get(k.tcp6);
        if (r6 !== undefined) rows[i] = r6;
      });
    }

    // 2. One fd scan for every inode; then the parent of each single holder is re-read in full, to
    //    catch a fork-inherited copy on an fd number the cache already knew. The daemon itself is not
    //    re-read as a parent: its sockets are close-on-exec, and its fd count must not cost anything.
    const wanted = new Set<string>();
    for (const r of rows) if (r !== null && r !== 'closed') wanted.add(r.inode);
    const holders = wanted.size > 0 ? scanner.find(wanted) : new Map<string, Holder[]>();
    const parentOf = new Map<number, number | undefined>();
    const parents = new Map<number, Set<string>>();
    for (const [inode, hs] of holders) {
      const only = hs.length === 1 ? hs[0] : undefined;
      if (only === undefined) continue;
      if (!parentOf.has(only.pid)) {
        const stat = readStat(only.pid);
        parentOf.set(only.pid, stat !== null && stat.startTime === only.startTime ? stat.ppid : undefined);
      }
      const ppid = parentOf.get(only.pid);
      if (ppid === undefined || ppid <= 1 || ppid === selfPid) continue;
      let set = parents.get(ppid);
      if (set === undefined) parents.set(ppid, (set = new Set()));
      set.add(inode);
    }
    for (const [ppid, inodes] of parents) scanner.recheck(ppid, inodes, holders);

    // 3. Per connection: who holds it, then whose session it is (once per distinct holder).
    const byHolder = new Map<string, AttestResult>();
    return rows.map((row): AttestResult => {
      if (row === null || row === 'closed') return { ok: false, reason: 'connection_closed' };
      const hs = holders.get(row.inode) ?? [];
      if (hs.length === 0) return { ok: false, reason: 'socket_not_found' };
      if (hs.length > 1) return { ok: false, reason: 'ambiguous' };
      const h = hs[0] as Holder;
      const key = `${h.pid}:${h.startTime}`;
      const seen = byHolder.get(key);
      // One result per holder, shared by its connections (frozen: nobody may change another's).
      if (seen !== undefined) return seen;
      const r = fromHolder(h);
      byHolder.set(key, r);
      return r;
    });
  }

  function fromHolder(holder: Holder): AttestResult {
    const peer = readFacts(holder.pid);
    if (peer === null || peer.startTime !== holder.startTime) return { ok: false, reason: 'process_gone' };
    if (peer.uid !== selfUid && !allowed.has(peer.uid)) {
      return { ok: false, reason: 'foreign_user', foreignUid: peer.uid };
    }
    return sessionOf(peer);
  }

  /** A kernel-attested peer. The uid the kernel recorded decides foreign_user before any /proc read.
   *  The pid is the connecting process's, but it may have exited since and its pid been reused: a
   *  process that started after the connection was accepted, or whose uid is not the recorded one,
   *  is not the peer (process_gone). */
  function fromPeer(q: PeerQuery, uptimeMs: number | null, hrNowMs: number, byPid: Map<number, { peer: ProcessFacts | null; session?: AttestResult }>): AttestResult {
    if (q.uid !== selfUid && !allowed.has(q.uid)) return { ok: false, reason: 'foreign_user', foreignUid: q.uid };
    // pid 0: the peer is in a pid namespace this one cannot name. A process's connections in one
    // batch read its facts and walk its session once, and share the result.
    let seen = byPid.get(q.pid);
    if (seen === undefined) byPid.set(q.pid, (seen = { peer: q.pid > 0 ? readFacts(q.pid) : null }));
    const peer = seen.peer;
    if (peer === null || peer.uid !== q.uid) return { ok: false, reason: 'process_gone' };
    if (uptimeMs === null) return { ok: false, reason: 'process_gone' }; // no clock to judge reuse by: never guess
    // Start times are clock ticks since boot (USER_HZ, 100 on Linux), the same clock as /proc/uptime.
    const acceptedTicks = (uptimeMs - (hrNowMs - q.acceptedAtHrMs)) / (1000 / USER_HZ);
    if (peer.startTime > Math.ceil(acceptedTicks) + START_SLACK_TICKS) return { ok: false, reason: 'process_gone' };
    return (seen.session ??= sessionOf(peer));
  }

  function sessionOf(peer: ProcessFacts): AttestResult {
    const walk = findSession(peer, ctx);
    if (!walk.ok) return walk;
    const session = walk.session;
    return {
      ok: true,
      attestation: {
        session,
        peer,
        sessionId: deriveSessionId(opts.hostId, bootId, session.pid, session.startTime),
        corroborated: corroborate(session, walk.passed),
      },
    };
  }

  function attestPeers(peers: PeerQuery[]): AttestResult[] {
    if (peers.length === 0) return [];
    const hrNowMs = hrMs();
    const uptimeMs = readUptimeMs();
    const byPid = new Map<number, { peer: ProcessFacts | null; session?: AttestResult }>();
    return peers.map((q) => fromPeer(q, uptimeMs, hrNowMs, byPid));
  }

  return {
    run(conns, peers = []) {
      let tcp: AttestResult[];
      try {
        tcp = attestBatch(conns);
      } catch {
        // /proc unreadable as a whole; never guess.
        tcp = conns.map(() => ({ ok: false, reason: 'socket_not_found' }));
      }
      try {
        return [...tcp, ...attestPeers(peers)];
      } catch {
        return [...tcp, ...peers.map((): AttestResult => ({ ok: false, reason: 'process_gone' }))];
      }
    },
    stats: () => ({ netScans, fdScans: scanner.scans }),
  };
}
