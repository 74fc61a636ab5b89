// The agent's account: created through the operator client (which starts the daemon if needed),
// its secret kept only in the credentials file. An existing account keeps the stored secret; one
// without a stored secret is rotated, since a secret is shown only once.
import { MailError } from '../../wire/errors.js';
import { operatorClient } from '../admin-commands.js';
import { readCredentials, writeCredentials } from '../credentials.js';
import type { Program } from './programs.js';

export async function ensureAccount(name: string, program: Program, env: NodeJS.ProcessEnv = process.env): Promise<{ created: boolean; rotated: boolean }> {
  const client = await operatorClient(undefined);
  try {
    let secret: string;
    let created = false;
    try {
      secret = (await client.admin.accountAdd({ id: name, kind: 'agent' })).secret;
      created = true;
    } catch (err) {
      if (!(err instanceof MailError && err.code === 'already_exists')) throw err;
      const stored = readCredentials(env).accounts[name];
      if (stored?.secret) {
        if (!stored.provider) writeWith(name, { ...stored, provider: program }, env);
        return { created: false, rotated: false };
      }
      secret = (await client.admin.accountRotate(name)).secret;
    }
    writeWith(name, { secret, provider: program }, env);
    return { created, rotated: !created };
  } finally {
    client.close();
  }
}

function writeWith(name: string, entry: { secret: string; provider?: string }, env: NodeJS.ProcessEnv): void {
  const c = readCredentials(env);
  c.accounts[name] = entry;
  writeCredentials(c, env);
}
