// A plain JSON-lines client of the stream door for tests: net.connect, frames written as given
// (objects or raw text), every frame received kept in order. No protocol logic of its own.
import { connect, type Socket } from 'node:net';
import { until } from './until.js';

export interface RawStream {
  sock: Socket;
  /** Every frame received, in order. */
  frames: any[];
  /** The pushed events among them. */
  events(): any[];
  /** Writes one frame (an object as one JSON line, a string as it is). */
  write(frame: object | string): void;
  /** Writes a request and resolves with the frame answering its id. */
  call(op: string, input?: unknown, extra?: Record<string, unknown>): Promise<any>;
  /** The first received frame that matches, waiting for it. */
  next(match: (f: any) => boolean, what?: string, ms?: number): Promise<any>;
  /** Resolves when the server closed the connection. */
  closed: Promise<void>;
  isClosed(): boolean;
  close(): void;
}

let ids = 0;

export async function openRaw(path: string): Promise<RawStream> {
  const sock = connect(path);
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', resolve);
    sock.once('error', reject);
  });
  const frames: any[] = [];
  let buf = '';
  let ended = false;
  sock.setEncoding('utf8');
  sock.on('data', (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      frames.push(JSON.parse(buf.slice(0, i)));
      buf = buf.slice(i + 1);
    }
  });
  sock.on('error', () => undefined);
  const closed = new Promise<void>((r) =>
    sock.once('close', () => {
      ended = true;
      r();
    }),
  );
  const next = (match: (f: any) => boolean, what = 'a frame', ms = 10_000) => until(what, () => frames.find(match), ms, 5);
  const write = (frame: object | string) => void sock.write(typeof frame === 'string' ? frame : JSON.stringify(frame) + '\n');
  return {
    sock,
    frames,
    events: () => frames.filter((f) => f.event !== undefined),
    write,
    async call(op, input, extra = {}) {
      const id = `r${++ids}`;
      write({ id, op, ...(input === undefined ? {} : { input }), ...extra });
      return next((f) => f.id === id, `the answer to ${op}`);
    },
    next,
    closed,
    isClosed: () => ended,
    close: () => sock.destroy(),
  };
}

/** A connection that said hello with `token`; fails the test when hello is refused. */
export async function helloRaw(path: string, token: string): Promise<RawStream & { hello: any }> {
  const s = await openRaw(path);
  const a = await s.call('hello', { token, client: 'test/1' });
  if (!a.result) throw new Error(`hello refused: ${JSON.stringify(a.error)}`);
  return Object.assign(s, { hello: a.result });
}
