// m4a backup / restore / export, and the JSON lines form of m4a import: thin wrappers; the work is in
// daemon/backup.ts (loaded only when one of these runs).
import type { Command } from 'commander';

interface Flags {
  dataDir?: string;
  store?: string;
  json?: boolean;
}

const storeOptions = (cmd: Command, what: string): Command =>
  cmd
    .option('--data-dir <dir>', "the daemon's data directory (its mail.db is the store by default)")
    .option('--store <spec>', `the store ${what} (default $M4A_STORE or <data dir>/mail.db, as m4a serve)`)
    .option('--json', 'JSON output');

const exit = (code: number): void => {
  process.exitCode = code;
};

export function registerBackup(program: Command): void {
  storeOptions(program.command('backup').description('a consistent copy of the SQLite mailbox, safe while the daemon runs (PostgreSQL: pg_dump)'), 'to copy')
    .requiredOption('--out <file>', 'the new file (never overwritten; mode 0600)')
    .action(async (o: Flags & { out: string }) => exit(await (await import('../daemon/backup.js')).runBackup(o)));
  storeOptions(program.command('restore <file>').description('put a backup in place of the SQLite mailbox (the daemon stopped; the replaced file is kept)'), 'to replace').action(
    async (file: string, o: Flags) => exit(await (await import('../daemon/backup.js')).runRestore({ ...o, file })),
  );
  storeOptions(program.command('export').description('every message, account, room, task and record as JSON lines (m4a import FILE.jsonl reads it)'), 'to read')
    .requiredOption('--out <file>', 'the new .jsonl file (never overwritten)')
    .option('--with-secrets', "include the accounts' secret digests (the file is then mode 0600)")
    .action(async (o: Flags & { out: string; withSecrets?: boolean }) => exit(await (await import('../daemon/backup.js')).runExport(o)));
}

/** `m4a import FILE.jsonl` (and `m4a import jsonl FILE`) beside the other import sources. */
export function registerJsonlImport(imp: Command): void {
  const run = async (file: string, o: Flags): Promise<void> => exit(await (await import('../daemon/backup.js')).runImportJsonl({ ...o, file }));
  storeOptions(imp.command('jsonl <file>').description('a file of m4a export: ids and seqs kept, safe to run again (adds nothing twice)'), 'to import into').action(
    async (file: string, own: Flags, cmd: Command) => run(file, { ...cmd.optsWithGlobals<Flags>(), ...own }),
  );
  storeOptions(imp.argument('[file]', 'a .jsonl file of m4a export (same as m4a import jsonl FILE)'), 'to import into').action(async (file: string | undefined, o: Flags) => {
    if (file === undefined) return void imp.help({ error: true });
    if (!file.endsWith('.jsonl')) imp.error(`m4a import: unknown source '${file}': name a subcommand (see m4a import --help) or a .jsonl file of m4a export`);
    await run(file, o);
  });
}
