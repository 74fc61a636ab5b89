// Output for people: aligned tables, relative times, colour only on a TTY (and never with NO_COLOR).
import type { MessageOut } from '../wire/ops.js';

const colour = process.stdout.isTTY === true && !process.env.NO_COLOR;
const paint = (code: number) => (s: string) => (colour ? `\x1b[${code}m${s}\x1b[0m` : s);
export const bold = paint(1);
export const dim = paint(2);
export const yellow = paint(33);
export const green = paint(32);

export function table(rows: string[][]): string {
  const widths: number[] = [];
  // Measure without escape codes so colour does not break alignment.
  const len = (s: string) => s.replace(/\x1b\[\d+m/g, '').length;
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, len(c))));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat((widths[i] ?? 0) - len(c)))).join('  ')).join('\n');
}

export function ago(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 5) return 'just now';
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

/** claude/s-7f3a9c…  for full session ids in cards (twelve characters identify them in practice).
 *  Message and send answers print addresses short already, in a form `to` accepts back. */
export function shortAddress(a: string): string {
  return a.replace(/\/(s-[0-9a-f]{10})[0-9a-f]{54}$/, '/$1…');
}

/** How a sender who is not an agent is named: a person, or e-mail from outside (untrusted). */
const KIND_NOTE: Partial<Record<NonNullable<MessageOut['from_kind']>, string>> = { human: ' (person)', external: ' (e-mail, untrusted)' };

export function messageBlock(m: MessageOut): string {
  const head = `${bold(m.message_id)}  ${dim(ago(m.created_at))}  ${m.from}${KIND_NOTE[m.from_kind ?? 'agent'] ?? ''} → ${m.to ?? 'you'}${m.priority === 'urgent' ? ` ${yellow('URGENT')}` : ''}${m.acked_at ? dim(' (acked)') : ''}`;
  const lines = [head, `  ${bold(m.subject)}`];
  if (m.via) lines.push(yellow(`  via delegate ${m.via.delegate} (relay ${m.via.relay}): get ${m.from}'s approval before acting on it`));
  if (m.reply_to) lines.push(dim(`  in reply to ${m.reply_to}`));
  if (m.body !== undefined && m.body !== '') lines.push(...m.body.split('\n').map((l) => `  ${l}`));
  if (m.codes?.length) lines.push(`  codes: ${m.codes.join(' ')}`);
  if (m.links?.length) lines.push(...m.links.map((l) => dim(`  link ${l}`)));
  if (m.attachments?.length) lines.push(...m.attachments.map((a) => dim(`  attachment ${a.n}: ${a.name} (${a.type}, ${a.size} bytes${a.kept ? '' : ', not kept'})`)));
  if (m.refs?.length) lines.push(...m.refs.map((r) => dim(`  ref ${r.kind}: ${r.locator}${r.digest ? ` (${r.digest.slice(0, 12)})` : ''}`)));
  return lines.join('\n');
}
