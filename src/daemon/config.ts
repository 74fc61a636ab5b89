// Where the daemon lives: flags over environment over XDG defaults.
import { join } from 'node:path';
import { DEFAULT_HOST, DEFAULT_PORT, defaultDataDir } from '../wire/locations.js';

export interface DaemonConfig {
  dataDir: string;
  host: string;
  port: number;
  /** 'sqlite:<path>' (default: <dataDir>/mail.db) or 'memory'. */
  store: string;
  /** Also serve the browser mailbox (only it) on this LAN ADDR:PORT (`serve --web-lan`). */
  webLan?: string;
}

export function resolveConfig(flags: Partial<DaemonConfig>, env: NodeJS.ProcessEnv = process.env): DaemonConfig {
  const dataDir = flags.dataDir ?? defaultDataDir(env);
  const port = flags.port ?? (env.M4A_PORT ? Number(env.M4A_PORT) : DEFAULT_PORT);
  return {
    dataDir,
    host: flags.host ?? DEFAULT_HOST,
    port,
    store: flags.store ?? env.M4A_STORE ?? `sqlite:${join(dataDir, 'mail.db')}`,
    ...(flags.webLan ? { webLan: flags.webLan } : {}),
  };
}
