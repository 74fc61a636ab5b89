// Socket inode -> holding process(es), by scanning /proc/*/fd/* links (`socket:[INODE]`).
//
// Cost control: a cache per pid {startTime, fd number -> inode} means a scan only readlinks fd numbers
// not seen before; it still readdirs every /proc/PID/fd and reads every /proc/PID/stat (a reused pid
// gets a new start time and is read afresh). The daemon's own pid is skipped, so its own (many)
// connections cost nothing, except as a last resort when no other process holds the inode.
//
// Correctness: a cached hit is always confirmed by a fresh readlink, and an inode not found through
// the cache triggers one full re-read of every fd before giving up. The cache can hide a socket only
// behind an fd number that was closed and reused between two scans. The caller re-reads the parent of
// a single holder in full, which catches the common case (socket opened on a reused number, then
// fork). Limits: a second holder other than that parent (a socket passed by SCM_RIGHTS, inherited by
// a grandchild of an older holder, or held by the daemon as the parent, which is never re-read)
// sitting on a reused fd number is not seen; nor is any process this user may not inspect (another
// uid, when the daemon is not root). Cost per scan: one stat read and one readdir per process plus a
// readlink per new fd; an inode the cache cannot find costs a readlink of every fd on the host.
import { readdirSync, readlinkSync } from 'node:fs';
import { readStartTime, readStat } from './proc-facts.js';

export interface Holder {
  pid: number;
  startTime: number;
}

interface PidEntry {
  startTime: number;
  /** fd number -> socket inode, or '' for anything that is not a socket. */
  fds: Map<string, string>;
}

function socketInode(link: string): string {
  return link.startsWith('socket:[') ? link.slice(8, -1) : '';
}

export class FdScanner {
  private readonly cache = new Map<number, PidEntry>();
  /** Number of find() calls, for tests and metrics. */
  scans = 0;

  constructor(private readonly selfPid: number) {}

  /** Every process holding each wanted inode (inodes with no holder are absent from the map). */
  find(wanted: ReadonlySet<string>): Map<string, Holder[]> {
    this.scans++;
    const hits = new Map<string, Map<number, Holder>>();
    const pids = listPids();
    for (const pid of this.cache.keys()) if (!pids.has(pid)) this.cache.delete(pid);
    const others = [...pids].filter((p) => p !== this.selfPid);

    for (const pid of others) this.scanPid(pid, wanted, hits, false);
    let missing = without(wanted, hits);
    if (missing.size > 0) for (const pid of others) this.scanPid(pid, missing, hits, true);
    missing = without(wanted, hits);
    if (missing.size > 0 && pids.has(this.selfPid)) this.scanPid(this.selfPid, missing, hits, true);
    return flatten(hits);
  }

  /** Re-reads one process's fds in full and adds it as a holder of any wanted inode it has. */
  recheck(pid: number, wanted: ReadonlySet<string>, into: Map<string, Holder[]>): void {
    const hits = new Map<string, Map<number, Holder>>();
    this.scanPid(pid, wanted, hits, true);
    for (const [inode, byPid] of hits) {
      const list = into.get(inode) ?? [];
      for (const h of byPid.values()) if (!list.some((x) => x.pid === h.pid)) list.push(h);
      into.set(inode, list);
    }
  }

  private scanPid(pid: number, wanted: ReadonlySet<string>, hits: Map<string, Map<number, Holder>>, full: boolean): void {
    const stat = readStat(pid);
    if (stat === null) {
      this.cache.delete(pid);
      return;
    }
    if (pid === 2 || stat.ppid === 2) return; // kernel threads hold no files
    const startTime = stat.startTime;
    let entry = this.cache.get(pid);
    if (entry === undefined || entry.startTime !== startTime) entry = { startTime, fds: new Map() };
    let names: string[];
    try {
      names = readdirSync(`/proc/${pid}/fd`);
    } catch {
      this.cache.delete(pid); // gone, or not ours to inspect
      return;
    }
    // Updated in place (a process with 10,000 fds would otherwise cost a new map of them per scan);
    // fd numbers not listed any more are dropped below, as a rebuilt map would drop them.
    const fds = entry.fds;
    let listed = 0;
    const found: string[] = [];
    for (const fd of names) {
      const cached = full ? undefined : fds.get(fd);
      let inode: string;
      if (cached === undefined || wanted.has(cached)) {
        // New fd number, full refresh, or a cached hit that must be confirmed fresh.
        try {
          inode = socketInode(readlinkSync(`/proc/${pid}/fd/${fd}`));
        } catch {
          fds.delete(fd); // closed meanwhile
          continue;
        }
      } else {
        inode = cached;
      }
      fds.set(fd, inode);
      listed++;
      if (inode !== '' && wanted.has(inode)) found.push(inode);
    }
    if (fds.size !== listed) {
      const now = new Set(names);
      for (const fd of fds.keys()) if (!now.has(fd)) fds.delete(fd);
    }
    // The pid may have been reused while we read its fds; then trust no hit from it. (A stale cache
    // entry needs no check: the next scan sees the new start time and drops it.)
    if (found.length > 0 && readStartTime(pid) !== startTime) {
      this.cache.delete(pid);
      return;
    }
    this.cache.set(pid, entry);
    for (const inode of found) {
      let byPid = hits.get(inode);
      if (byPid === undefined) hits.set(inode, (byPid = new Map<number, Holder>()));
      byPid.set(pid, { pid, startTime });
    }
  }
}

function listPids(): Set<number> {
  const out = new Set<number>();
  for (const name of readdirSync('/proc')) {
    const c = name.charCodeAt(0);
    if (c >= 48 && c <= 57) out.add(Number(name));
  }
  return out;
}

function without(wanted: ReadonlySet<string>, hits: Map<string, unknown>): Set<string> {
  const out = new Set<string>();
  for (const w of wanted) if (!hits.has(w)) out.add(w);
  return out;
}

function flatten(hits: Map<string, Map<number, Holder>>): Map<string, Holder[]> {
  const out = new Map<string, Holder[]>();
  for (const [inode, byPid] of hits) out.set(inode, [...byPid.values()]);
  return out;
}
