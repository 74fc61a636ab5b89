// The run's outputs: a table on stdout, the JSON file, and the latency-vs-mailbox-size chart (SVG).
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ScenarioResult } from './lib/context.js';
import type { SizePoint } from './scenarios/latency.js';
import { printTargets, type TargetLine } from './lib/targets.js';

export function printTable(results: ScenarioResult[], targetLines: TargetLine[] = []): string {
  const rows = results.flatMap((r) => r.rows);
  const w = [0, 0, 0];
  for (const r of rows) {
    w[0] = Math.max(w[0] ?? 0, r.scenario.length);
    w[1] = Math.max(w[1] ?? 0, r.system.length);
    w[2] = Math.max(w[2] ?? 0, r.metric.length);
  }
  const lines: string[] = [];
  let last = '';
  for (const r of rows) {
    if (r.scenario !== last) {
      lines.push('');
      last = r.scenario;
    }
    lines.push(`${r.scenario.padEnd(w[0] ?? 0)}  ${r.system.padEnd(w[1] ?? 0)}  ${r.metric.padEnd(w[2] ?? 0)}  ${r.value}`);
  }
  const checks = results.flatMap((r) => r.targets);
  if (checks.length) {
    lines.push('', 'Other checks (earlier targets, judged by their scenarios)');
    for (const t of checks) lines.push(`  ${t.met === null ? '  ?  ' : t.met ? ' met ' : 'MISSED'}  ${t.text}: ${t.measured}`);
  }
  if (targetLines.length) lines.push(...printTargets(targetLines));
  return lines.join('\n');
}

export function writeJson(path: string, doc: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(doc, null, 2)}\n`);
}

/** Grouped bars: send and inbox p50 and p99 at each mailbox size, on HTTP and on the stream door
 *  (when the run had one), on a linear ms axis. */
export function latencySvg(points: SizePoint[], title: string): string {
  const stream = points.some((p) => p.streamSend && p.streamInbox);
  const W = stream ? 960 : 720;
  const H = stream ? 384 : 360;
  const L = 60;
  const R = 20;
  const T = 50;
  const B = stream ? 84 : 60;
  const series = [
    { label: 'HTTP send p50', color: '#4e79a7', get: (p: SizePoint) => p.send.latency.p50 },
    { label: 'HTTP send p99', color: '#a0cbe8', get: (p: SizePoint) => p.send.latency.p99 },
    { label: 'HTTP inbox p50', color: '#f28e2b', get: (p: SizePoint) => p.inbox.latency.p50 },
    { label: 'HTTP inbox p99', color: '#ffbe7d', get: (p: SizePoint) => p.inbox.latency.p99 },
  ];
  if (stream)
    series.push(
      { label: 'stream send p50', color: '#59a14f', get: (p: SizePoint) => p.streamSend?.latency.p50 ?? NaN },
      { label: 'stream send p99', color: '#8cd17d', get: (p: SizePoint) => p.streamSend?.latency.p99 ?? NaN },
      { label: 'stream inbox p50', color: '#b07aa1', get: (p: SizePoint) => p.streamInbox?.latency.p50 ?? NaN },
      { label: 'stream inbox p99', color: '#d4a6c8', get: (p: SizePoint) => p.streamInbox?.latency.p99 ?? NaN },
    );
  const max = Math.max(5, ...points.flatMap((p) => series.map((s) => s.get(p)).filter(Number.isFinite)));
  const yMax = Math.ceil(max);
  const y = (v: number): number => T + (H - T - B) * (1 - v / yMax);
  const groupW = (W - L - R) / points.length;
  const barW = Math.min(36, (groupW - 30) / series.length);
  const legendRows = stream ? 2 : 1;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  out.push(`<text x="${W / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${esc(title)}</text>`);
  for (let v = 0; v <= yMax; v += yMax > 10 ? Math.ceil(yMax / 10) : 1) {
    out.push(`<line x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${v} ms</text>`);
  }
  // Target lines: p50 ≤ 1 ms, p99 ≤ 5 ms.
  for (const [v, label] of [
    [1, 'p50 target 1 ms'],
    [5, 'p99 target 5 ms'],
  ] as const) {
    if (v > yMax) continue;
    out.push(`<line x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}" stroke="#c00" stroke-dasharray="4 3"/>`);
    out.push(`<text x="${W - R - 4}" y="${y(v) - 4}" text-anchor="end" fill="#c00">${label}</text>`);
  }
  points.forEach((p, gi) => {
    const gx = L + gi * groupW + (groupW - barW * series.length) / 2;
    series.forEach((s, si) => {
      const v = s.get(p);
      const x = gx + si * barW;
      if (!Number.isFinite(v)) return;
      out.push(
        `<rect x="${x.toFixed(1)}" y="${y(v).toFixed(1)}" width="${(barW - 3).toFixed(1)}" height="${(y(0) - y(v)).toFixed(1)}" fill="${s.color}"><title>${s.label}: ${v} ms</title></rect>`,
      );
      out.push(`<text x="${(x + (barW - 3) / 2).toFixed(1)}" y="${(y(v) - 3).toFixed(1)}" text-anchor="middle" font-size="10">${v.toFixed(2)}</text>`);
    });
    out.push(`<text x="${L + gi * groupW + groupW / 2}" y="${H - B + 18}" text-anchor="middle">${p.stored.toLocaleString('en-US')} stored</text>`);
    out.push(
      `<text x="${L + gi * groupW + groupW / 2}" y="${H - B + 32}" text-anchor="middle" fill="#666" font-size="10">reader holds ${p.readerMailbox.toLocaleString('en-US')}</text>`,
    );
  });
  const perRow = Math.ceil(series.length / legendRows);
  series.forEach((s, si) => {
    const x = L + (si % perRow) * 160;
    const ly = H - 18 - (legendRows - 1 - Math.floor(si / perRow)) * 16;
    out.push(`<rect x="${x}" y="${ly}" width="12" height="12" fill="${s.color}"/><text x="${x + 16}" y="${ly + 10}">${s.label}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
