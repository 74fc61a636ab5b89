// Splitting a byte stream into lines, pulled one at a time so the door can stop between two lines
// of one chunk (its in-flight bound). Each byte is scanned once for "\n", and the pieces of an
// unfinished line are kept as a list and joined once, when its end arrives: a line that trickles in
// byte by byte costs its length, not its length squared. A line longer than the bound is refused
// as soon as its kept pieces pass the bound, without waiting for its end.

/** A complete line (without its "\n"), a line over the bound (its length so far), or null: no
 *  complete line is buffered. */
export type FramerOutput = Buffer | { overflow: number } | null;

export class LineFramer {
  /** Chunks not yet scanned past `from` (the first one is being read). */
  private chunks: Buffer[] = [];
  private from = 0;
  /** Earlier pieces of the line being read. */
  private pieces: Buffer[] = [];
  private kept = 0;
  private failed = false;

  constructor(private readonly maxLineBytes: number) {}

  push(chunk: Buffer): void {
    if (!this.failed && chunk.length > 0) this.chunks.push(chunk);
  }

  /** True while buffered bytes remain to be scanned. */
  get pending(): boolean {
    return this.chunks.length > 0;
  }

  next(): FramerOutput {
    while (!this.failed) {
      const chunk = this.chunks[0];
      if (chunk === undefined) return null;
      const nl = chunk.indexOf(0x0a, this.from);
      if (nl === -1) {
        const rest = chunk.subarray(this.from);
        this.kept += rest.length;
        this.chunks.shift();
        this.from = 0;
        if (this.kept > this.maxLineBytes) return this.overflow(this.kept);
        // A small rest of a large chunk is copied: a view would keep the whole chunk alive.
        this.pieces.push(rest.length * 4 < chunk.length ? Buffer.from(rest) : rest);
        continue;
      }
      const len = this.kept + nl - this.from;
      if (len > this.maxLineBytes) return this.overflow(len);
      const tail = chunk.subarray(this.from, nl);
      const line = this.kept === 0 ? tail : Buffer.concat([...this.pieces, tail], len);
      this.pieces = [];
      this.kept = 0;
      this.from = nl + 1;
      if (this.from >= chunk.length) {
        this.chunks.shift();
        this.from = 0;
      }
      return line;
    }
    return null;
  }

  /** After an overflow the framer takes nothing more: the door closes the connection. */
  private overflow(actual: number): FramerOutput {
    this.failed = true;
    this.chunks = [];
    this.pieces = [];
    this.kept = 0;
    return { overflow: actual };
  }
}
