// Summarises a V8 .cpuprofile (from node --cpu-prof): self time per function and per place (this
// project's files, each dependency, Node's internals, GC, idle).
import { readFileSync } from 'node:fs';
import { ROOT } from './procs.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface SelfEntry {
  name: string;
  where: string;
  ms: number;
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Share of the wall time the thread was idle (waiting on I/O). */
  idleShare: number;
  top: SelfEntry[];
  byPlace: SelfEntry[];
  /** Self time of every sample charged to the nearest frame of this project's own code on its
   *  stack (so Node's and the dependencies' work lands on the m4a function that asked for it). */
  byOwnCode: SelfEntry[];
}

function place(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native / V8)';
  const u = url.replace(/^file:\/\//, '');
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u);
  if (nm) return `dep: ${nm[1]}`;
  if (u.startsWith('node:')) return 'node: internals';
  if (u.startsWith(ROOT))
    return `m4a: ${u
      .slice(ROOT.length + 1)
      .split('/')
      .slice(0, 2)
      .join('/')}`;
  return u;
}

/** `windows`: only samples inside these spans (µs of the monotonic clock, as the profile's own
 *  timestamps and `process.hrtime` are) count, and shares are of their summed length. */
export function summarizeProfile(path: string, topN = 20, windows?: [number, number][]): ProfileSummary {
  const p = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  const inside = (t: number): boolean => !windows || windows.some(([a, b]) => t >= a && t < b);
  let at = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    const id = p.samples[i] as number;
    at += p.timeDeltas[i] ?? 0;
    if (!inside(at)) continue;
    // timeDeltas[i] is the time before sample i; attribute the following delta to this sample.
    const dt = (p.timeDeltas[i + 1] ?? 0) / 1000;
    self.set(id, (self.get(id) ?? 0) + dt);
  }
  const totalMs = windows ? windows.reduce((s, [a, b]) => s + (b - a), 0) / 1000 : (p.endTime - p.startTime) / 1000;
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const own = (url: string): boolean => {
    const u = url.replace(/^file:\/\//, '');
    return u.startsWith(ROOT) && !u.includes('/node_modules/');
  };
  const ownerOf = new Map<number, { name: string; where: string }>();
  const owner = (id: number): { name: string; where: string } => {
    const known = ownerOf.get(id);
    if (known !== undefined) return known;
    let cur: number | undefined = id;
    let found: { name: string; where: string } | null = null;
    while (cur !== undefined) {
      const n = byId.get(cur);
      if (!n) break;
      if (own(n.callFrame.url)) {
        const u = n.callFrame.url.replace(/^file:\/\//, '').slice(ROOT.length + 1);
        found = { name: n.callFrame.functionName || '(anonymous)', where: `${u}:${n.callFrame.lineNumber + 1}` };
        break;
      }
      cur = parent.get(cur);
    }
    if (!found) {
      const name = byId.get(id)?.callFrame.functionName ?? '';
      found = { name: name.startsWith('(') ? name : '(no m4a frame on the stack: module loading, bootstrap, I/O callbacks)', where: '' };
    }
    ownerOf.set(id, found);
    return found;
  };
  const owners = new Map<string, SelfEntry>();
  const fn = new Map<string, SelfEntry>();
  const places = new Map<string, SelfEntry>();
  let idle = 0;
  for (const [id, t] of self) {
    const n = byId.get(id);
    if (!n) continue;
    const name = n.callFrame.functionName || '(anonymous)';
    if (name === '(idle)') idle += t;
    const url = n.callFrame.url.replace(/^file:\/\//, '');
    const short = url.startsWith(ROOT) ? url.slice(ROOT.length + 1) : url;
    const key = `${name} ${short}:${n.callFrame.lineNumber + 1}`;
    const e = fn.get(key) ?? { name, where: short ? `${short}:${n.callFrame.lineNumber + 1}` : '', ms: 0, share: 0 };
    e.ms += t;
    fn.set(key, e);
    const o = owner(id);
    const ok = `${o.name} ${o.where}`;
    const oe = owners.get(ok) ?? { ...o, ms: 0, share: 0 };
    oe.ms += t;
    owners.set(ok, oe);
    const pl = place(n.callFrame.url, name);
    const pe = places.get(pl) ?? { name: pl, where: '', ms: 0, share: 0 };
    pe.ms += t;
    places.set(pl, pe);
  }
  const fin = (xs: Iterable<SelfEntry>, n: number): SelfEntry[] =>
    [...xs]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, n)
      .map((e) => ({ ...e, ms: Math.round(e.ms * 10) / 10, share: Math.round((e.ms / totalMs) * 1000) / 10 }));
  return {
    totalMs: Math.round(totalMs),
    idleShare: Math.round((idle / totalMs) * 1000) / 10,
    top: fin(fn.values(), topN),
    byPlace: fin(places.values(), 15),
    byOwnCode: fin(owners.values(), topN),
  };
}
