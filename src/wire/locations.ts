// Where clients find the daemon: part of the contract between the daemon and its clients.
import { homedir } from 'node:os';
import { join } from 'node:path';

export const DEFAULT_PORT = 7341;
export const DEFAULT_HOST = '127.0.0.1';

export const DATA_FILES = {
  hostId: 'host-id',
  lock: 'daemon.lock',
  operatorToken: 'operator.token',
  daemonInfo: 'daemon.json',
  /** The stream door's Unix socket (0600): JSON lines, peers attested by SO_PEERCRED. */
  socket: 'm4a.sock',
} as const;

/** --data-dir, else M4A_DATA_DIR, else $XDG_DATA_HOME/mail4agent (~/.local/share/mail4agent). */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.M4A_DATA_DIR) return env.M4A_DATA_DIR;
  return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'mail4agent');
}
