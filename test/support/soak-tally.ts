// Tallies for `npm run soak:reliability` (scripts/soak-reliability.mjs). The fuzz and crash tests
// count what they sent and what went wrong, by door; in `npm test` the counts are only kept in
// memory. With M4A_SOAK_REPORT set to a file, each test process appends one JSON line per door every
// few seconds while it runs ({progress: true, ...}) and once more at exit ({final: true, ...}), so the
// runner can print a progress line and add the doors up. The properties still fail on the first bad
// answer: a non-zero count here is the same finding the failing test reports, counted.
import { appendFileSync } from 'node:fs';

export interface SoakTally {
  /** Requests, messages, argv runs or sequences sent to the door. */
  requests: number;
  /** Answers with a 5xx status (or the door's equivalent: an SMTP 4xx/5xx the door did not mean). */
  status5xx: number;
  /** The daemon (or relay) gone: a refused or reset connection, an exit. */
  crashes: number;
  /** A request without an answer within its deadline. */
  hangs: number;
  /** A refused request that changed the store. */
  changed: number;
  /** Crash rounds survived (kill -9 and restart), or model sequences checked. */
  rounds: number;
}

const REPORT = process.env.M4A_SOAK_REPORT;
const STAGE = process.env.M4A_SOAK_STAGE ?? '';
const tallies = new Map<string, SoakTally>();

const blank = (): SoakTally => ({ requests: 0, status5xx: 0, crashes: 0, hangs: 0, changed: 0, rounds: 0 });

/** The running tally of one door ("http", "mcp", "tasks", "a2a", "smtp", "relay", "cli", ...). */
export function tally(door: string): SoakTally {
  let t = tallies.get(door);
  if (!t) {
    t = blank();
    tallies.set(door, t);
  }
  return t;
}

/** The door an HTTP path belongs to, for the tally of the shared raw-HTTP helper. */
export function doorOfPath(path: string): string {
  const p = path.split('?')[0] ?? '';
  if (p === '/mcp') return 'mcp';
  if (p.startsWith('/a2a') || p.startsWith('/.well-known/agent')) return 'a2a';
  if (/^\/(task|approval)(\/|$)/.test(p)) return 'tasks';
  if (/^\/lease(\/|$)/.test(p)) return 'leases';
  if (p.startsWith('/admin/')) return 'admin';
  return 'http';
}

function flush(kind: 'progress' | 'final'): void {
  if (!REPORT) return;
  const lines = [...tallies].map(([door, t]) => JSON.stringify({ [kind]: true, stage: STAGE, pid: process.pid, door, ...t }) + '\n');
  if (lines.length > 0) appendFileSync(REPORT, lines.join(''));
}

if (REPORT) {
  setInterval(() => flush('progress'), 5_000).unref();
  process.on('exit', () => flush('final'));
}
