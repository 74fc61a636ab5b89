// Finding the daemon from the CLI: daemon.json in the data directory, else the default address.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DATA_FILES, DEFAULT_PORT, defaultDataDir } from '../wire/locations.js';

export function dataDirFrom(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return flag ?? defaultDataDir(env);
}

export function daemonUrl(dataDir: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.M4A_URL) return env.M4A_URL.replace(/\/mcp$/, '');
  try {
    const info = JSON.parse(readFileSync(join(dataDir, DATA_FILES.daemonInfo), 'utf8')) as { url?: string };
    if (info.url) return info.url;
  } catch {
    /* no daemon.json: fall back to the default */
  }
  return `http://127.0.0.1:${env.M4A_PORT ?? DEFAULT_PORT}`;
}

export function operatorToken(dataDir: string): string {
  try {
    return readFileSync(join(dataDir, DATA_FILES.operatorToken), 'utf8').trim();
  } catch {
    throw new Error(`cannot read the operator credential in ${dataDir} (start the daemon once, as this user)`);
  }
}
