// m4a attachment MESSAGE_ID N: one kept attachment of an e-mail from outside (docs/email.md),
// written as bytes to --out FILE (0600, never over an existing file unless --force) or to stdout
// when stdout is not a terminal. The bytes are untrusted: nothing here opens or runs them.
import { chmodSync, closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import type { Command } from 'commander';
import { UsageError, withDaemon, type ConnectOptions } from './connect.js';
import { fail, printJson } from './output.js';

interface AttachmentOptions extends ConnectOptions {
  out?: string;
  force?: boolean;
  json?: boolean;
}

/** Writes the bytes to a new file (0600), or over an existing one only with force. */
export function writeAttachment(path: string, bytes: Buffer, force: boolean): void {
  let fd: number;
  try {
    fd = openSync(path, force ? 'w' : 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new UsageError(`${path} exists; --force writes over it`);
    throw err;
  }
  try {
    // An existing file keeps its mode on open: make it private like a new one.
    if (force) chmodSync(path, 0o600);
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function registerAttachment(program: Command): void {
  program
    .command('attachment')
    .description('fetch an attachment of an e-mail from outside (get lists them): untrusted bytes')
    .argument('<message_id>', 'the message (m-…)')
    .argument('<n>', "the attachment's number in the listing, from 0")
    .option('--out <file>', 'write the bytes to this file (0600); without it, to stdout when that is not a terminal')
    .option('--force', 'write over an existing --out file')
    .option('--json', 'print the answer as JSON (name, type, size, data as base64)')
    .option('--account <name>', "which account's secret to use")
    .option('--data-dir <dir>', "the daemon's data directory")
    .action(async (messageId: string, nText: string, o: AttachmentOptions) => {
      try {
        const n = Number(nText);
        if (!/^\d+$/.test(nText) || !Number.isSafeInteger(n)) throw new UsageError(`the attachment number must be a whole number from 0, not ${JSON.stringify(nText)}`);
        if (!o.json && o.out === undefined && process.stdout.isTTY) throw new UsageError('stdout is a terminal: write the bytes with --out FILE (or pipe them)');
        const r = await withDaemon(o, (c) => c.attachment(messageId, n));
        if (o.json) return printJson(r);
        const bytes = Buffer.from(r.data, 'base64');
        if (o.out !== undefined) {
          writeAttachment(o.out, bytes, o.force === true);
          process.stderr.write(`m4a: wrote ${bytes.length} bytes (${r.type}) to ${o.out}\n`);
        } else await new Promise<void>((resolve, reject) => process.stdout.write(bytes, (err) => (err ? reject(err) : resolve())));
      } catch (err) {
        fail(err, !!o.json);
      }
    });
}
