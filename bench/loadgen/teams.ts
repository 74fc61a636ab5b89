// Teams and contact policies (scenario 15). `team-rtt`: one client, one request at a time, the
// variants interleaved round by round so the machine's noise falls on all alike: a direct send to an
// open account (the baseline), to a contacts_only account that lists the sender, to a contacts_only
// account the sender only shares a room with (the policy's longest check), a post to a room of N
// members (one message), and a `team:` send to a team of the same N (N copies), in a new order each
// round, so no variant always follows the same one.
import { Poster, keepAlive, progressReporter } from './http.js';
import { nowNs, summarize, type Summary } from '../lib/stats.js';

export interface TeamRttSpec {
  mode: 'team-rtt';
  port: number;
  sender: string;
  /** Account ids: open, contacts_only with the sender as a contact, contacts_only sharing a room. */
  open: string;
  contact: string;
  roomMate: string;
  room: string;
  team: string;
  members: number;
  count: number;
  warmup: number;
}

export interface TeamRttResult {
  count: number;
  members: number;
  open: Summary;
  contact: Summary;
  roomMate: Summary;
  room: Summary;
  team: Summary;
  /** Copies per team send, as the answers listed them (every one must be `members`). */
  copies: number[];
}

/** The items in an order fixed by the round (a small LCG: the same on every run). */
function shuffled<T>(items: readonly T[], round: number): T[] {
  const out = [...items];
  let x = (round * 2654435761 + 1) >>> 0;
  for (let j = out.length - 1; j > 0; j--) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    const k = x % (j + 1);
    [out[j], out[k]] = [out[k]!, out[j]!];
  }
  return out;
}

export async function runTeamRtt(s: TeamRttSpec): Promise<TeamRttResult> {
  const p = new Poster(keepAlive(1), s.port, s.sender);
  const samples = { open: [] as number[], contact: [] as number[], roomMate: [] as number[], room: [] as number[], team: [] as number[] };
  const copies = new Set<number>();
  const tick = progressReporter(s.count, 'rounds');
  const body = 'x'.repeat(200);
  const timed = async (to: string): Promise<[number, { expanded?: unknown[] }]> => {
    const t0 = nowNs();
    const r = await p.json<{ expanded?: unknown[] }>('/mail/send', { to, subject: 'bench', body });
    return [Number(nowNs() - t0) / 1e6, r];
  };
  const variants = [
    { to: s.open, into: samples.open },
    { to: s.contact, into: samples.contact },
    { to: s.roomMate, into: samples.roomMate },
    { to: `#${s.room}`, into: samples.room },
    { to: `team:${s.team}`, into: samples.team },
  ];
  for (let i = -s.warmup; i < s.count; i++) {
    // A fresh order each round (a rotation would keep each variant behind the same one): none
    // always follows the team send's burst of commits.
    for (const v of shuffled(variants, i + s.warmup)) {
      const [t, r] = await timed(v.to);
      if (i < 0) continue;
      v.into.push(t);
      if (v.into === samples.team) copies.add(r.expanded?.length ?? 0);
    }
    if (i >= 0) tick(i + 1);
  }
  p.close();
  return {
    count: s.count,
    members: s.members,
    open: summarize(samples.open),
    contact: summarize(samples.contact),
    roomMate: summarize(samples.roomMate),
    room: summarize(samples.room),
    team: summarize(samples.team),
    copies: [...copies],
  };
}
