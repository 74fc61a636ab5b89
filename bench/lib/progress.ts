// A one-line progress display on stderr: `[01:23] scenario · phase  done/total`. On a TTY the line is
// rewritten in place; otherwise only phase changes are printed, one per line.
const tty = process.stderr.isTTY === true;
const started = Date.now();
let phase = '';
let detail = '';
let ticker: NodeJS.Timeout | null = null;

function clock(): string {
  const s = Math.floor((Date.now() - started) / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

function draw(): void {
  if (!tty) return;
  const cols = process.stderr.columns || 100;
  const line = `[${clock()}] ${phase}${detail ? `  ${detail}` : ''}`;
  process.stderr.write(`\r\x1b[K${line.slice(0, cols - 1)}`);
}

export const progress = {
  phase(label: string): void {
    phase = label;
    detail = '';
    if (tty) {
      ticker ??= setInterval(draw, 250).unref();
      draw();
    } else process.stderr.write(`[${clock()}] ${label}\n`);
  },
  update(done: number, total?: number, unit = ''): void {
    detail = total
      ? `${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')}${unit ? ` ${unit}` : ''} ${bar(done / total)}`
      : `${done.toLocaleString('en-US')}${unit ? ` ${unit}` : ''}`;
    draw();
  },
  /** A line that stays (a finished figure, a warning). */
  note(text: string): void {
    if (tty) process.stderr.write(`\r\x1b[K${text}\n`);
    else process.stderr.write(`${text}\n`);
    draw();
  },
  done(): void {
    if (ticker) clearInterval(ticker);
    ticker = null;
    if (tty) process.stderr.write('\r\x1b[K');
  },
};

function bar(f: number): string {
  const w = 20;
  const n = Math.max(0, Math.min(w, Math.round(f * w)));
  return `[${'#'.repeat(n)}${'.'.repeat(w - n)}]`;
}
