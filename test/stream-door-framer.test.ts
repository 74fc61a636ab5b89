// The stream door's line framer: lines across chunks, many in one chunk pulled one at a time, the
// bound at and over its edge (with and without a newline in sight), and a trickled line joined once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LineFramer } from '../src/doors/stream/line-framer.js';

const text = (v: unknown): string => (Buffer.isBuffer(v) ? v.toString('utf8') : JSON.stringify(v));

describe('line framer', () => {
  it('splits lines across and within chunks, one pull at a time', () => {
    const f = new LineFramer(100);
    f.push(Buffer.from('ab'));
    assert.equal(f.next(), null);
    f.push(Buffer.from('c\nde\nf'));
    assert.equal(text(f.next()), 'abc');
    assert.equal(f.pending, true, 'the rest of the chunk waits for the next pull');
    assert.equal(text(f.next()), 'de');
    assert.equal(f.next(), null);
    f.push(Buffer.from('g\n\n'));
    assert.equal(text(f.next()), 'fg');
    assert.equal(text(f.next()), '');
    assert.equal(f.next(), null);
    assert.equal(f.pending, false);
  });

  it('a line at the bound passes; one byte over is an overflow, also before its newline arrives', () => {
    const at = new LineFramer(10);
    at.push(Buffer.from('0123456789\n'));
    assert.equal(text(at.next()), '0123456789');
    const over = new LineFramer(10);
    over.push(Buffer.from('01234567890\n'));
    assert.deepEqual(over.next(), { overflow: 11 });
    const open = new LineFramer(10);
    open.push(Buffer.from('012345'));
    assert.equal(open.next(), null);
    open.push(Buffer.from('67890'));
    assert.deepEqual(open.next(), { overflow: 11 }, 'refused without waiting for the end of the line');
    open.push(Buffer.from('\nnext\n'));
    assert.equal(open.next(), null, 'nothing more is read after an overflow');
  });

  it('a line trickled in byte by byte comes out whole', () => {
    const f = new LineFramer(1 << 20);
    const line = 'x'.repeat(200_000);
    for (const ch of line) f.push(Buffer.from(ch));
    f.push(Buffer.from('\n'));
    assert.equal(text(f.next()), line);
  });
});
