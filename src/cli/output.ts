// Output for people and for scripts: --json prints the daemon's answer as is (a stable schema);
// otherwise aligned text. Errors go to stderr with a meaningful exit code.
import { MailError } from '../wire/errors.js';
import { neutralise, safeJson } from '../wire/text.js';
import { DaemonUnreachable, PortOwnedByOtherUser } from '../client/http-client.js';
import { UsageError } from './connect.js';
import { EXIT } from './exit-codes.js';

export { EXIT };

// Agents read this output too (through their shell tool): a line separator, bidi control or
// invisible character in a subject, body, label or path is shown as a \u escape, never raw.
export function printJson(v: unknown): void {
  process.stdout.write(`${safeJson(v, 2)}\n`);
}

/** Text for people and agents: mail content neutralised, our own colour codes kept. */
export function printText(s: string): void {
  process.stdout.write(
    `${s
      .split(/(\x1b\[\d+m)/)
      .map((part, i) => (i % 2 ? part : neutralise(part, true)))
      .join('')}\n`,
  );
}

export { table } from './format.js';

export function fail(err: unknown, json: boolean): never {
  if (err instanceof MailError) {
    if (json) process.stderr.write(`${safeJson(err.toBody())}\n`);
    else process.stderr.write(`m4a: ${err.code}: ${neutralise(err.message)}\n`);
    process.exit(EXIT.failed);
  }
  if (err instanceof UsageError) {
    process.stderr.write(`m4a: ${err.message}\n`);
    process.exit(EXIT.usage);
  }
  if (err instanceof PortOwnedByOtherUser) {
    process.stderr.write(`m4a: ${err.message}\n`);
    process.exit(EXIT.impostor);
  }
  if (err instanceof DaemonUnreachable) {
    process.stderr.write(`m4a: ${err.message} (start it with: m4a serve)\n`);
    process.exit(EXIT.unreachable);
  }
  process.stderr.write(`m4a: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(EXIT.failed);
}
