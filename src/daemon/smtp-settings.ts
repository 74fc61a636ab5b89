// `m4a serve --smtp …`'s flags checked before the daemon touches anything: each mistake is one
// startup line naming it, never a listener that half works.
import { normalEmail } from '../wire/address.js';
import { parseSmtpAddress } from '../doors/smtp/smtp-limits.js';
import type { DaemonConfig } from './config.js';

/** Messages the SMTP door may be told to take at most (`--smtp-max-bytes`): each is held whole. */
export const SMTP_MAX_BYTES_CEILING = 100 * 1024 * 1024;

/** Where the SMTP door listens, or null without `--smtp`; throws on a flag that cannot work. */
export function smtpSettings(cfg: DaemonConfig): { host: string; port: number } | null {
  const domain = cfg.mailDomain;
  if (domain !== undefined && typeof normalEmail(`postmaster@${domain}`) !== 'string')
    throw new Error(`malformed: --mail-domain wants a host name such as agents.example.com, not ${domain}`);
  for (const [local, account] of Object.entries(cfg.mailAliases ?? {})) {
    if (!domain) throw new Error('email_unavailable: --mail-alias needs --mail-domain DOMAIN');
    if (typeof normalEmail(`${local}@${domain}`) !== 'string' || !account)
      throw new Error(`malformed: --mail-alias wants LOCAL=ACCOUNT with LOCAL a valid local part, not ${local}=${account}`);
  }
  if (!cfg.smtp) {
    if (cfg.smtpLan) throw new Error('malformed: --smtp-lan without --smtp ADDR:PORT');
    if (cfg.smtpMaxBytes !== undefined) throw new Error('malformed: --smtp-max-bytes without --smtp ADDR:PORT');
    return null;
  }
  if (!domain) throw new Error('email_unavailable: --smtp needs --mail-domain DOMAIN (it takes mail for <account>@<domain>)');
  const at = parseSmtpAddress(cfg.smtp);
  if (!at) throw new Error(`malformed: --smtp wants ADDR:PORT such as 127.0.0.1:2525, not ${cfg.smtp}`);
  if (!at.loopback && !cfg.smtpLan)
    throw new Error(`smtp_not_loopback: --smtp ${cfg.smtp} is not a loopback address; add --smtp-lan to take mail from the network (plain SMTP, no TLS)`);
  const max = cfg.smtpMaxBytes;
  if (max !== undefined && !(Number.isInteger(max) && max >= 1 && max <= SMTP_MAX_BYTES_CEILING))
    throw new Error(`malformed: --smtp-max-bytes is a whole number from 1 to ${SMTP_MAX_BYTES_CEILING}, not ${max}`);
  return { host: at.host, port: at.port };
}
