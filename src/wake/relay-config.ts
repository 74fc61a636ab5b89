// The relay's address and credentials (`m4a serve --smtp-relay URL --smtp-relay-credentials FILE`).
// Credentials never come from the command line (other users read it in /proc/PID/cmdline): from a
// file only this user may read, or from M4A_SMTP_RELAY_USER / M4A_SMTP_RELAY_PASSWORD, which no
// wake program inherits (wire/inherited-env.ts). Every refusal names its code first, so the line
// `m4a serve` prints when it cannot start says what to fix.
import { readFileSync, statSync } from 'node:fs';

export type RelayConfigCode = 'smtp_relay_invalid' | 'smtp_credentials_unsafe' | 'smtp_credentials_unreadable' | 'smtp_credentials_malformed';

export class RelayConfigError extends Error {
  constructor(
    readonly code: RelayConfigCode,
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.name = 'RelayConfigError';
  }
}

export interface RelayTarget {
  host: string;
  port: number;
  /** smtps:// (TLS from the first byte); smtp:// upgrades with STARTTLS when offered. */
  secure: boolean;
  auth: { user: string; pass: string } | null;
}

export const RELAY_ENV = { user: 'M4A_SMTP_RELAY_USER', password: 'M4A_SMTP_RELAY_PASSWORD' } as const;

/** `smtp://host[:port]` (default 587) or `smtps://host[:port]` (default 465); nothing else. */
export function parseRelayUrl(raw: string): Omit<RelayTarget, 'auth'> {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new RelayConfigError('smtp_relay_invalid', `--smtp-relay ${JSON.stringify(raw)} is not a URL (smtp://host:port or smtps://host:port)`);
  }
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:') throw new RelayConfigError('smtp_relay_invalid', `--smtp-relay must be smtp:// or smtps://, not ${u.protocol}//`);
  if (u.username || u.password)
    throw new RelayConfigError(
      'smtp_relay_invalid',
      `--smtp-relay may not carry credentials (other users can read a command line): use --smtp-relay-credentials FILE or ${RELAY_ENV.user}/${RELAY_ENV.password}`,
    );
  if ((u.pathname && u.pathname !== '/') || u.search || u.hash) throw new RelayConfigError('smtp_relay_invalid', '--smtp-relay is smtp://host:port: no path, query or fragment');
  if (!u.hostname) throw new RelayConfigError('smtp_relay_invalid', '--smtp-relay names no host');
  const secure = u.protocol === 'smtps:';
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  return { host, port: u.port ? Number(u.port) : secure ? 465 : 587, secure };
}

/** Line 1 the user name, line 2 the password (the rest of the line, spaces included); the file
 *  must be this user's and readable by nobody else (chmod 600). */
export function readCredentialsFile(path: string): { user: string; pass: string } {
  let st;
  try {
    st = statSync(path);
  } catch (err) {
    throw new RelayConfigError('smtp_credentials_unreadable', `cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!st.isFile()) throw new RelayConfigError('smtp_credentials_unreadable', `${path} is not a file`);
  const mode = st.mode & 0o777;
  if (mode & 0o077) throw new RelayConfigError('smtp_credentials_unsafe', `${path} is readable by group or others (mode ${mode.toString(8).padStart(4, '0')}): chmod 600 ${path}`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) throw new RelayConfigError('smtp_credentials_unsafe', `${path} belongs to uid ${st.uid}, not to this user (uid ${uid})`);
  const lines = readFileSync(path, 'utf8').split(/\r?\n/);
  const user = (lines[0] ?? '').trim();
  const pass = lines[1] ?? '';
  if (!user || !pass) throw new RelayConfigError('smtp_credentials_malformed', `${path}: line 1 is the user name, line 2 the password`);
  return { user, pass };
}

/** The credentials from the file when one is named, else from the environment (both or neither),
 *  else none (a relay that takes mail from this host without AUTH). */
export function relayCredentials(file: string | undefined, env: NodeJS.ProcessEnv): { user: string; pass: string } | null {
  if (file) return readCredentialsFile(file);
  const user = env[RELAY_ENV.user];
  const pass = env[RELAY_ENV.password];
  if (!user && !pass) return null;
  if (!user || !pass) throw new RelayConfigError('smtp_credentials_malformed', `set both ${RELAY_ENV.user} and ${RELAY_ENV.password}, or neither`);
  return { user, pass };
}

export function relayTarget(url: string, credentialsFile: string | undefined, env: NodeJS.ProcessEnv = process.env): RelayTarget {
  return { ...parseRelayUrl(url), auth: relayCredentials(credentialsFile, env) };
}

/** Where the relay is, for logs and receipts: never its credentials. */
export const relayName = (t: Omit<RelayTarget, 'auth'>): string => `${t.secure ? 'smtps' : 'smtp'}://${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`;
