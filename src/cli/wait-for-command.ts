// m4a wait-for: wait for the next mail that matches, and print it with its one-time codes and
// links (docs/email.md). Only types come from wire/, so zod stays off the CLI's start-up; the
// daemon checks the filters and names what it refuses. A timeout prints nothing and exits 1.
import type { Command } from 'commander';
import type { WaitForRequest } from '../wire/wait-for.js';
import { withDaemon, type ConnectOptions } from './connect.js';
import { fail, printJson, printText } from './output.js';
import { bold, dim } from './format.js';

/** The CLI's default; the operation itself requires timeout_secs. */
const DEFAULT_TIMEOUT_SECS = 60;

interface WaitForOptions extends ConnectOptions {
  from?: string;
  subjectContains?: string;
  bodyContains?: string;
  timeout?: string;
  json?: boolean;
}

export function waitForInput(o: WaitForOptions): WaitForRequest {
  const input: WaitForRequest = { timeout_secs: o.timeout !== undefined ? Number(o.timeout) : DEFAULT_TIMEOUT_SECS };
  if (o.from !== undefined) input.from = o.from;
  if (o.subjectContains !== undefined) input.subject_contains = o.subjectContains;
  if (o.bodyContains !== undefined) input.body_contains = o.bodyContains;
  return input;
}

export function registerWaitFor(program: Command): void {
  program
    .command('wait-for')
    .description('wait for new mail that matches every filter; print it with its codes and links')
    .option('--from <address>', 'only mail from this sender (as printed) or account')
    .option('--subject-contains <s>', 'only mail whose subject contains this (any case)')
    .option('--body-contains <s>', 'only mail whose body contains this (any case)')
    .option('--timeout <secs>', 'give up after this many seconds (default 60, at most 600)')
    .option('--json', 'print the answer as JSON')
    .option('--account <name>', "which account's secret to use")
    .option('--data-dir <dir>', "the daemon's data directory")
    .action(async (o: WaitForOptions) => {
      try {
        const r = await withDaemon(o, (c) => c.waitFor(waitForInput(o)));
        if (o.json) printJson(r);
        else if (r.message) {
          const m = r.message;
          const lines = [`${m.message_id} ${dim(m.created_at)} ${m.from} ${bold(m.subject)}`];
          for (const code of r.codes) lines.push(`code: ${code}`);
          for (const link of r.links) lines.push(`link: ${link}`);
          printText(lines.join('\n'));
        } else printText(dim('no matching mail before the timeout'));
        if (!r.message) process.exitCode = 1;
      } catch (err) {
        fail(err, !!o.json);
      }
    });
}
