// The relay fuzz's node frames and the model of what the relay does with them (relay-nodes.ts,
// wire/relay-link.ts): a frame the schemas refuse, one before the hello, a second hello, a hello
// naming another node, binary or non-JSON text, and mail for a mailbox the hello did not offer
// close the link 1008; broken UTF-8 is 1007 and an oversized frame 1009 (the WebSocket layer);
// valid mail is acknowledged; an answer goes to the call it names, or nowhere.
import fc from 'fast-check';
import type { WebSocket } from 'ws';
import { NodeFrame, RELAY_LIMITS } from '../../src/wire/relay-link.js';
import { tally } from './soak-tally.js';
import { bodyOf, tree, weirdString } from './fuzz-values.js';

/** Stands for the id of the call a browser waits on, filled in as the frame is sent. */
export const PENDING = '$pending';

export type Sent = { kind: 'json'; v: unknown } | { kind: 'text'; s: string } | { kind: 'binary' } | { kind: 'badutf8' } | { kind: 'oversize' };

const mutated = bodyOf({
  bases: [
    { t: 'mail', mailbox: 'fzbox', cursor: 'c1' },
    { t: 'answer', id: PENDING, status: 200, body: { ok: true } },
    { t: 'answer', id: 'nobody-asked', status: 404, body: null },
    { t: 'hello', node: 'fz', mailboxes: ['fzbox'], version: 'fz' },
  ],
  fields: {
    t: ['hello', 'answer', 'mail', 'welcome', 'call', 'ack', 'cancel', 'x', ''],
    node: ['fz', 'home', 'FZ', ''],
    mailboxes: [[], ['fzbox'], ['fzbox', 'other'], Array.from({ length: RELAY_LIMITS.mailboxes + 1 }, (_, i) => `m${i}`), ['bad name']],
    version: ['1', 'x'.repeat(65)],
    id: [PENDING, 'nobody-asked', '', 'x'.repeat(65)],
    status: [200, 201, 204, 404, 503, 599, 199, 600, 200.5, '200'],
    body: [null, {}, 'x', [1], { error: { code: 'unknown_message' } }],
    mailbox: ['fzbox', 'alice', 'other', '', 'bad name'],
    cursor: ['c1', 'c2', '', 'x'.repeat(256), 'x'.repeat(257), 1],
  },
});

const valid = fc.oneof(
  fc.record({ t: fc.constant('mail'), mailbox: fc.constant('fzbox'), cursor: fc.string({ maxLength: 40 }) }),
  fc.record({ t: fc.constant('answer'), id: fc.constant(PENDING), status: fc.integer({ min: 200, max: 599 }), body: tree }),
  fc.record({ t: fc.constant('answer'), id: fc.string({ minLength: 1, maxLength: 64 }), status: fc.integer({ min: 200, max: 599 }), body: tree }),
);

export const frameArb: fc.Arbitrary<Sent> = fc.oneof(
  { weight: 6, arbitrary: mutated.map((v): Sent => ({ kind: 'json', v })) },
  { weight: 8, arbitrary: valid.map((v): Sent => ({ kind: 'json', v })) },
  { weight: 1, arbitrary: fc.oneof(weirdString, fc.constantFrom('{', '', 'null', '{"t":"mail"')).map((s): Sent => ({ kind: 'text', s })) },
  { weight: 1, arbitrary: fc.constantFrom<Sent>({ kind: 'binary' }, { kind: 'badutf8' }) },
  { weight: 1, arbitrary: fc.constant<Sent>({ kind: 'oversize' }) },
);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface LinkModel {
  greeted: boolean;
  offered: readonly string[];
  pendingId: string;
}

export interface Outcome {
  /** The close code the relay must answer with, or null: the link stays open. */
  close: number | null;
  /** The acks it owes, in order. */
  acks: { mailbox: string; cursor: string }[];
  /** The first answer to the waiting call, which the browser must get as is. */
  answered: { status: number; body: unknown } | null;
  greeted: boolean;
  offered: readonly string[];
}

/** Sends the frames up to the first the relay must close on, and says what it must do. */
export function sendFrames(ws: WebSocket, frames: readonly Sent[], m: LinkModel): Outcome {
  const resolve = (v: unknown): unknown =>
    v === PENDING ? m.pendingId : Array.isArray(v) ? v.map(resolve) : isObject(v) ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolve(x)])) : v;
  const out: Outcome = { close: null, acks: [], answered: null, greeted: m.greeted, offered: m.offered };
  for (const f of frames) {
    tally('relay').requests++;
    let value: { v: unknown } | null = null;
    if (f.kind === 'oversize') {
      ws.send(`{"t":"mail","mailbox":"fzbox","cursor":"${'x'.repeat(RELAY_LIMITS.frameBytes)}"}`);
      out.close = 1009;
    } else if (f.kind === 'badutf8') {
      ws.send(Buffer.from([0x7b, 0xff, 0x7d]), { binary: false });
      out.close = 1007;
    } else if (f.kind === 'binary') {
      ws.send(Buffer.from('{"t":"mail","mailbox":"fzbox","cursor":"c1"}'), { binary: true });
      out.close = 1008;
    } else {
      const text = f.kind === 'text' ? f.s : (JSON.stringify(resolve(f.v)) ?? 'null');
      ws.send(text);
      try {
        value = { v: JSON.parse(text) as unknown };
      } catch {
        out.close = 1008;
      }
    }
    if (value) {
      const p = NodeFrame.safeParse(value.v);
      if (!p.success) out.close = 1008;
      else if (p.data.t === 'hello') {
        if (out.greeted || p.data.node !== 'fz') out.close = 1008;
        else {
          out.greeted = true;
          out.offered = p.data.mailboxes;
        }
      } else if (!out.greeted) out.close = 1008;
      else if (p.data.t === 'mail') {
        if (!out.offered.includes(p.data.mailbox)) out.close = 1008;
        else out.acks.push({ mailbox: p.data.mailbox, cursor: p.data.cursor });
      } else if (p.data.id === m.pendingId && !out.answered) out.answered = { status: p.data.status, body: p.data.body };
    }
    if (out.close !== null) break;
  }
  return out;
}
