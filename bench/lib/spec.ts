// A child's spec: its first argument, JSON inline or `@file` for large specs (argv is capped).
import { readFileSync } from 'node:fs';

export function readSpec<T>(): T {
  const arg = process.argv[2] ?? '{}';
  return JSON.parse(arg.startsWith('@') ? readFileSync(arg.slice(1), 'utf8') : arg) as T;
}

/** Prints the result line and exits; errors go to stderr with exit code 1. */
export function finish(p: Promise<unknown>): void {
  p.then(
    (result) => {
      process.stdout.write(`${JSON.stringify(result)}\n`);
      process.exit(0);
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
