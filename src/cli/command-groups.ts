// Which module registers which top-level commands, so `m4a send` loads (and, in the bundle,
// evaluates) only the mail verbs and not setup, guard, tasks, wake or the admin tree. Help, an
// unknown word or no command at all loads every group. test/cli-command-groups.test.ts checks
// that each group registers exactly the names listed here.
import type { Command } from 'commander';

export interface CommandGroup {
  names: readonly string[];
  load: () => Promise<(program: Command) => void>;
}

/** In the order `m4a --help` lists them. */
export const COMMAND_GROUPS: readonly CommandGroup[] = [
  {
    names: ['send', 'reply', 'inbox', 'read', 'thread', 'ack', 'unread', 'whoami', 'peers', 'alias', 'status'],
    load: async () => (await import('./mail-commands.js')).registerMail,
  },
  { names: ['setup', 'unsetup'], load: async () => (await import('./setup/index.js')).registerSetup },
  { names: ['hook', 'listen'], load: async () => (await import('./hook-commands.js')).registerHooks },
  { names: ['daemon'], load: async () => (await import('./daemon-commands.js')).registerDaemon },
  { names: ['admin'], load: async () => (await import('./admin-commands.js')).registerAdmin },
  { names: ['user'], load: async () => (await import('./user-commands.js')).registerUser },
  { names: ['team'], load: async () => (await import('./team-commands.js')).registerTeam },
  { names: ['wake', 'timer', 'receipts'], load: async () => (await import('./wake-commands.js')).registerWake },
  { names: ['attention'], load: async () => (await import('./attention-commands.js')).registerAttention },
  { names: ['task', 'approval'], load: async () => (await import('./task-commands.js')).registerTasks },
  { names: ['contacts', 'policy'], load: async () => (await import('./contact-commands.js')).registerContacts },
  { names: ['guard'], load: async () => (await import('./guard-commands.js')).registerGuard },
  { names: ['reserve', 'lease'], load: async () => (await import('./lease-commands.js')).registerLeases },
  { names: ['import'], load: async () => (await import('./import-commands.js')).registerImport },
  { names: ['backup', 'restore', 'export'], load: async () => (await import('./backup-commands.js')).registerBackup },
  { names: ['report'], load: async () => (await import('./report-commands.js')).registerReport },
  { names: ['open'], load: async () => (await import('./open-commands.js')).registerOpen },
  { names: ['search'], load: async () => (await import('./search-commands.js')).registerSearch },
  { names: ['wait-for'], load: async () => (await import('./wait-for-command.js')).registerWaitFor },
  { names: ['attachment'], load: async () => (await import('./attachment-command.js')).registerAttachment },
  { names: ['connect'], load: async () => (await import('./relay-link-commands.js')).registerRelayLink },
  { names: ['relay'], load: async () => (await import('./relay-commands.js')).registerRelay },
];

/** The groups a command line (argv after the script) needs: none for one of main.ts's own
 *  commands (`own`), the one naming its first word, else all of them. */
export function groupsFor(argv: readonly string[], own: readonly string[]): readonly CommandGroup[] {
  const first = argv.find((a) => !a.startsWith('-'));
  if (first !== undefined && own.includes(first)) return [];
  const one = first === undefined ? undefined : COMMAND_GROUPS.find((g) => g.names.includes(first));
  return one ? [one] : COMMAND_GROUPS;
}
