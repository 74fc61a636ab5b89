// Reading argv the way node would: which argument is the script, and what follows it.

/** node options that take their value as the next argument (the `--opt=value` form needs no entry). */
const NODE_OPTS_WITH_VALUE = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader', '--input-type', '--conditions', '-C', '--title', '--env-file']);

/** node options after which there is no script file (code comes from the command line or stdin). */
const NODE_NO_SCRIPT = new Set(['-e', '--eval', '-p', '--print', '-i', '--interactive', '-']);

export function isNodeBase(base: string): boolean {
  return /^node(js)?[0-9.]*$/.test(base);
}

/** Bun, also as the npm `bun` package installs it (`bun.exe`, on every platform). It runs a script
 *  as node does: the first argument that is not an option. */
export function isBunBase(base: string): boolean {
  return base === 'bun' || base === 'bun.exe';
}

/** A runtime whose first non-option argument is the script the process really is. */
export const isScriptHost = (base: string): boolean => isNodeBase(base) || isBunBase(base);

/** Index in argv of the script node runs (first non-option argument after node's options), or -1. */
export function nodeScriptIndex(argv: readonly string[]): number {
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (a === '--') return i + 1 < argv.length ? i + 1 : -1;
    if (NODE_NO_SCRIPT.has(a)) return -1;
    if (!a.startsWith('-')) return i;
    if (!a.includes('=') && NODE_OPTS_WITH_VALUE.has(a)) i++;
  }
  return -1;
}

export function baseName(p: string): string {
  return p.slice(p.lastIndexOf('/') + 1);
}

/** A value fit to report: control characters dropped, at most `maxBytes` of UTF-8 (never a split
 *  character). */
export function cleanValue(value: string, maxBytes = 256): string {
  const v = value.replace(/[\u0000-\u001f\u007f-\u009f]/g, '');
  if (Buffer.byteLength(v, 'utf8') <= maxBytes) return v;
  let out = '';
  let bytes = 0;
  for (const ch of v) {
    bytes += Buffer.byteLength(ch, 'utf8');
    if (bytes > maxBytes) break;
    out += ch;
  }
  return out;
}
