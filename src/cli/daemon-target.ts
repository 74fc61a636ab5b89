// Finding the daemon from the CLI: daemon.json in the data directory, else the default address;
// its stream door's socket when daemon.json names one.
import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { DATA_FILES, DEFAULT_PORT, defaultDataDir } from '../wire/locations.js';

export function dataDirFrom(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return flag ?? defaultDataDir(env);
}

function readInfo(dataDir: string): { url?: unknown; socket?: unknown } {
  try {
    return JSON.parse(readFileSync(join(dataDir, DATA_FILES.daemonInfo), 'utf8')) as { url?: unknown; socket?: unknown };
  } catch {
    return {}; // no daemon.json: the defaults
  }
}

export function daemonUrl(dataDir: string, env: NodeJS.ProcessEnv = process.env): string {
  return daemonTarget(dataDir, env).url;
}

/** The daemon's address and, unless M4A_NO_STREAM=1 or M4A_URL names another daemon, the socket of
 *  its stream door (daemon.json has `socket` while the door is up): MailClient's `url` and `socket`. */
export function daemonTarget(dataDir: string, env: NodeJS.ProcessEnv = process.env): { url: string; socket: string | undefined } {
  const info = readInfo(dataDir);
  const own = typeof info.url === 'string' && info.url ? info.url : undefined;
  const url = env.M4A_URL ? env.M4A_URL.replace(/\/mcp$/, '') : (own ?? `http://127.0.0.1:${env.M4A_PORT ?? DEFAULT_PORT}`);
  const socket = typeof info.socket === 'string' && isAbsolute(info.socket) && env.M4A_NO_STREAM !== '1' && url === own ? info.socket : undefined;
  return { url, socket };
}

/** The stream door's socket for the daemon at `url` (see daemonTarget), or undefined: HTTP only. */
export function daemonSocket(dataDir: string, url: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const t = daemonTarget(dataDir, env);
  return t.url === url ? t.socket : undefined;
}

export function operatorToken(dataDir: string): string {
  try {
    return readFileSync(join(dataDir, DATA_FILES.operatorToken), 'utf8').trim();
  } catch {
    throw new Error(`cannot read the operator credential in ${dataDir} (start the daemon once, as this user)`);
  }
}
