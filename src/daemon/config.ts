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
  /** `--mail-domain`: every account's e-mail address is `<account>@<domain>` (docs/email.md). */
  mailDomain?: string;
  /** `--smtp-relay smtp://host:port` (or smtps://): mail to `email:` addresses leaves through it. */
  smtpRelay?: string;
  /** `--smtp-relay-credentials FILE`: the relay's user (line 1) and password (line 2), mode 0600;
   *  else M4A_SMTP_RELAY_USER / M4A_SMTP_RELAY_PASSWORD; never the command line. */
  smtpRelayCredentials?: string;
  /** `--email-per-hour N`: e-mails an account may send per hour (default 20). */
  emailPerHour?: number;
  /** `--smtp ADDR:PORT`: receive e-mail there (doors/smtp); loopback unless `smtpLan`. */
  smtp?: string;
  /** `--smtp-lan`: allow `smtp` on an address that is not loopback. */
  smtpLan?: boolean;
  /** `--mail-alias LOCAL=ACCOUNT` (repeatable): local parts mapped to accounts. */
  mailAliases?: Record<string, string>;
  /** `--smtp-max-bytes N`: the SMTP door's message size cap (default 10 MiB). */
  smtpMaxBytes?: number;
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
    ...(flags.mailDomain ? { mailDomain: flags.mailDomain } : {}),
    ...(flags.smtpRelay ? { smtpRelay: flags.smtpRelay } : {}),
    ...(flags.smtpRelayCredentials ? { smtpRelayCredentials: flags.smtpRelayCredentials } : {}),
    ...(flags.emailPerHour !== undefined ? { emailPerHour: flags.emailPerHour } : {}),
    ...(flags.smtp ? { smtp: flags.smtp } : {}),
    ...(flags.smtpLan ? { smtpLan: true } : {}),
    ...(flags.mailAliases ? { mailAliases: flags.mailAliases } : {}),
    ...(flags.smtpMaxBytes !== undefined ? { smtpMaxBytes: flags.smtpMaxBytes } : {}),
  };
}
