// What every agent-side command shares: its options (--json, --account, --data-dir) and how it runs
// one request through the daemon and prints the answer: the wire response as JSON with --json
// (a stable schema), else the command's human text (nothing when it is empty).
import type { Command } from 'commander';
import type { MailClient } from '../client/http-client.js';
import { withDaemon, type ConnectOptions } from './connect.js';
import { fail, printJson, printText } from './output.js';

export interface Common extends ConnectOptions {
  json?: boolean;
}

export const common = (cmd: Command): Command =>
  cmd.option('--json', 'print the answer as JSON').option('--account <name>', "which account's secret to use").option('--data-dir <dir>', "the daemon's data directory");

export async function run<T>(o: Common, fn: (c: MailClient) => Promise<T>, human: (r: T) => string): Promise<void> {
  try {
    const r = await withDaemon(o, fn);
    if (o.json) printJson(r);
    else {
      const text = human(r);
      if (text) printText(text);
    }
  } catch (err) {
    fail(err, !!o.json);
  }
}
