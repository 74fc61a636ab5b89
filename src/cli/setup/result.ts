// The --json answer of `m4a setup` and `m4a unsetup`: a stable schema for scripts and tests.
import { z } from 'zod';
import { PROGRAMS } from './programs.js';

export const FileAction = z.enum(['created', 'updated', 'unchanged', 'removed', 'restored']);

export const SetupResult = z.strictObject({
  program: z.enum(PROGRAMS),
  scope: z.enum(['user', 'project']),
  account: z.string(),
  account_created: z.boolean(),
  secret_rotated: z.boolean(),
  transport: z.enum(['stdio', 'http']),
  files: z.array(z.strictObject({ path: z.string(), action: FileAction })),
  todo: z.array(z.string()),
});

export type FileAction = z.infer<typeof FileAction>;
export type SetupResult = z.infer<typeof SetupResult>;
