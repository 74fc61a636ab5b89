// 11. What a delivery chain costs a send. One daemon, three recipients: one without a chain, one
// whose chain's first step fails at once (hooks: it has no session, so the dispatcher records an
// attempt per message), one whose chain succeeds (a webhook to a loopback receiver that answers
// 204, signed, recorded). Sends alternate in rounds so the machine's noise hits every case alike;
// the figure that matters is the ratio to the plain recipient.
import { createServer } from 'node:http';
import type { Ctx, ScenarioResult, Row, Target } from '../lib/context.js';
import { startDaemon } from '../lib/daemon.js';
import type { FixedResult } from '../loadgen/fixed.js';
import { pct, ratio } from '../lib/format.js';

const CASES = [
  { to: 'wc-plain', what: 'no chain' },
  { to: 'wc-hooks', what: 'hooks (fails: no session), debounce 0' },
  { to: 'wc-hook', what: 'webhook to loopback (204), debounce 0' },
  { to: 'wc-hook250', what: 'webhook to loopback (204), default debounce 250 ms' },
] as const;

export async function wakeChain(ctx: Ctx): Promise<ScenarioResult> {
  let hits = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const port = (receiver.address() as { port: number }).port;
  const d = await startDaemon(ctx.dataDir('wake-chain'));
  try {
    const secrets = await d.accounts(
      CASES.map((c) => c.to),
      8,
    );
    // The sender is a person: the loop guard never quiets a person, so every send is woken for
    // (an agent sending 3,000 messages to one recipient would be quieted after 30).
    const sender = (await d.operator.admin.accountAdd({ id: 'wc-s', kind: 'human' })).secret;
    await d.operator.call('/admin/wake/set', { account: 'wc-hooks', steps: [{ kind: 'hooks' }], debounce_ms: 0 });
    await d.operator.call('/admin/wake/set', { account: 'wc-hook', steps: [{ kind: 'webhook', url: `http://127.0.0.1:${port}/m4a` }], debounce_ms: 0 });
    await d.operator.call('/admin/wake/set', { account: 'wc-hook250', steps: [{ kind: 'webhook', url: `http://127.0.0.1:${port}/m4a` }] });
    void secrets;
    const rounds = ctx.quick ? 2 : 5;
    const per = Math.max(50, Math.round(ctx.sizes.latencyCount / rounds));
    const results = new Map<string, FixedResult[]>(CASES.map((c) => [c.to, []]));
    for (let round = 0; round < rounds; round++) {
      for (const c of CASES) {
        const body = JSON.stringify({ to: c.to, subject: 'chain cost', body: 'x'.repeat(200) });
        const r = await ctx.loadgen<FixedResult>(
          { mode: 'fixed', port: d.port, path: '/mail/send', token: sender, body, concurrency: 1, count: per, warmupPerConnection: 10 },
          `11 wake chain · round ${round + 1}/${rounds} · ${c.what}`,
        );
        results.get(c.to)!.push(r);
      }
    }
    const merged = (to: string) => {
      const rs = results.get(to)!;
      const p50s = rs.map((r) => r.latency.p50).sort((a, b) => a - b);
      const p99s = rs.map((r) => r.latency.p99).sort((a, b) => a - b);
      return { p50: p50s[Math.floor(p50s.length / 2)]!, p99: p99s[Math.floor(p99s.length / 2)]!, errors: rs.reduce((n, r) => n + r.errors, 0) };
    };
    const plain = merged('wc-plain');
    const rows: Row[] = CASES.map((c) => {
      const m = merged(c.to);
      return {
        scenario: '11 delivery chain cost per send',
        system: c.what,
        metric: 'median of rounds',
        value: `${pct({ ...results.get(c.to)![0]!.latency, p50: m.p50, p99: m.p99 })} · p50 ${ratio(m.p50, plain.p50)} of no chain`,
      };
    });
    const hook = merged('wc-hook250');
    // One wake in flight per recipient: mail committed during a wake is gathered into the next one.
    rows.push({ scenario: '11 delivery chain cost per send', system: 'webhook receiver', metric: 'POSTs received', value: `${hits} for ${per * rounds} sends (bursts gathered)` });
    const targets: Target[] = [
      {
        id: 'wake-chain-cost',
        text: 'back-to-back sends to an account with a delivery chain (default debounce) cost at most 1.25× sends to one without (p50)',
        measured: `no chain p50 ${plain.p50.toFixed(2)} ms; webhook, default debounce ${ratio(hook.p50, plain.p50)}; with debounce 0 (a wake per burst of about two sends): hooks ${ratio(merged('wc-hooks').p50, plain.p50)}, webhook ${ratio(merged('wc-hook').p50, plain.p50)}`,
        met: hook.p50 <= plain.p50 * 1.25,
      },
    ];
    return {
      name: 'wakechain',
      data: { rounds, perRound: per, cases: Object.fromEntries(CASES.map((c) => [c.to, { what: c.what, ...merged(c.to), runs: results.get(c.to) }])), webhookHits: hits },
      rows,
      targets,
    };
  } finally {
    await d.stop();
    await new Promise<void>((r) => receiver.close(() => r()));
  }
}
