// The relay link as the operator sees it (`m4a connect …`): its settings, checked and kept in a
// 0600 file by the daemon (daemon/relay-link-config.ts), and the connector that dials with them.
// Any change of settings redials, since the relay learns the offered mailboxes only in `hello`.
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { MailError } from '../../wire/errors.js';
import { RELAY_LIMITS } from '../../wire/relay-link.js';
import type { ConnectConfigureInput, ConnectStatus, ConnectUpdateInput } from '../../wire/relay-link-ops.js';
import type { Caller } from '../../engine/mail-engine.js';
import type { Logger } from '../../engine/log.js';
import type { WebApiContext } from '../web/web-api.js';
import { DEFAULT_TIMINGS, RelayConnector, type ConnectorTimings, type RelayTarget } from './relay-connector.js';

/** What the config file holds. */
export interface RelayLinkSettings extends RelayTarget {
  human_mailboxes: string[];
  enabled: boolean;
}

export interface RelayLinkOptions {
  ctx: WebApiContext;
  log: Logger;
  version: string;
  /** The settings the daemon found at start (null: none). */
  settings: RelayLinkSettings | null;
  /** Writes the settings durably (atomically, 0600) before a change takes effect. */
  save(s: RelayLinkSettings): void;
  timings?: Partial<ConnectorTimings>;
}

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\]|localhost)$/i;

/** wss:// anywhere; ws:// only to this machine (the token would cross a network in clear). */
export function checkServerUrl(text: string): string {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new MailError('malformed', 'server_url is not a URL (wss://relay.example)', { field: 'server_url', reason: 'not a URL' });
  }
  if (u.protocol !== 'wss:' && u.protocol !== 'ws:') throw new MailError('malformed', 'server_url must be wss://', { field: 'server_url', reason: 'not wss' });
  if (u.protocol === 'ws:' && !LOOPBACK.test(u.hostname))
    throw new MailError('malformed', 'server_url: ws:// only to a loopback host; use wss://', { field: 'server_url', reason: 'ws to a non-loopback host' });
  if (u.username || u.password) throw new MailError('malformed', 'server_url may not carry user info', { field: 'server_url', reason: 'user info' });
  if (u.search || u.hash) throw new MailError('malformed', 'server_url may not carry a query or fragment', { field: 'server_url', reason: 'query or fragment' });
  return u.href;
}

function checkCaFile(path: string): string {
  if (!isAbsolute(path)) throw new MailError('malformed', 'ca_file must be an absolute path', { field: 'ca_file', reason: 'not absolute' });
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch {
    throw new MailError('malformed', `ca_file ${path} cannot be read`, { field: 'ca_file', reason: 'unreadable' });
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new MailError('malformed', `ca_file ${path} holds no PEM certificate`, { field: 'ca_file', reason: 'no certificate' });
  return path;
}

export class RelayLink {
  private settings: RelayLinkSettings | null;
  private connector: RelayConnector | null = null;
  private readonly timings: ConnectorTimings;

  constructor(private readonly o: RelayLinkOptions) {
    this.settings = o.settings;
    this.timings = { ...DEFAULT_TIMINGS, ...o.timings };
  }

  /** Dials when the saved settings say enabled. */
  boot(): void {
    if (this.settings?.enabled) this.redial();
  }

  close(): void {
    this.connector?.stop();
    this.connector = null;
  }

  async configure(c: Caller, i: ConnectConfigureInput): Promise<ConnectStatus> {
    operatorOnly(c);
    const next: RelayLinkSettings = {
      server_url: checkServerUrl(i.server_url),
      node_id: i.node_id,
      node_token: i.node_token,
      human_mailboxes: await this.checkMailboxes(i.human_mailboxes),
      ca_file: i.ca_file === undefined ? null : checkCaFile(i.ca_file),
      enabled: this.settings?.enabled ?? false,
    };
    return this.apply(next);
  }

  async update(c: Caller, i: ConnectUpdateInput): Promise<ConnectStatus> {
    operatorOnly(c);
    const s = this.configured();
    const next: RelayLinkSettings = {
      ...s,
      ...(i.server_url !== undefined ? { server_url: checkServerUrl(i.server_url) } : {}),
      ...(i.node_id !== undefined ? { node_id: i.node_id } : {}),
      ...(i.node_token !== undefined ? { node_token: i.node_token } : {}),
      ...(i.human_mailboxes !== undefined ? { human_mailboxes: await this.checkMailboxes(i.human_mailboxes) } : {}),
      ...(i.ca_file !== undefined ? { ca_file: i.ca_file === null ? null : checkCaFile(i.ca_file) } : {}),
    };
    return this.apply(next);
  }

  removeUser(c: Caller, mailbox: string): Promise<ConnectStatus> {
    operatorOnly(c);
    const s = this.configured();
    if (!s.human_mailboxes.includes(mailbox))
      throw new MailError('unknown_participant', `${mailbox} is not offered through the relay`, { participant: mailbox, field: 'human_mailbox' });
    return Promise.resolve(this.apply({ ...s, human_mailboxes: s.human_mailboxes.filter((m) => m !== mailbox) }));
  }

  setEnabled(c: Caller, enabled: boolean): Promise<ConnectStatus> {
    operatorOnly(c);
    return Promise.resolve(this.apply({ ...this.configured(), enabled }));
  }

  status(c: Caller): Promise<ConnectStatus> {
    operatorOnly(c);
    return Promise.resolve(this.view());
  }

  /** The state without a caller (doctor, tests). */
  view(): ConnectStatus {
    const s = this.settings;
    const st = this.connector?.status() ?? { connected: false, since: null, last_error: null, rtt_ms: null };
    return {
      configured: s !== null,
      enabled: s?.enabled ?? false,
      connected: st.connected,
      since: st.since === null ? null : new Date(st.since).toISOString(),
      last_error: st.last_error,
      rtt_ms: st.rtt_ms,
      server_url: s?.server_url ?? null,
      node_id: s?.node_id ?? null,
      human_mailboxes: s ? [...s.human_mailboxes] : [],
      ca_file: s?.ca_file ?? null,
      token: s?.node_token ? 'set' : 'unset',
    };
  }

  private configured(): RelayLinkSettings {
    if (!this.settings) throw new MailError('malformed', 'the relay link is not configured: m4a connect configure first', { field: 'server_url', reason: 'not configured' });
    return this.settings;
  }

  /** Saved first: a change that cannot be kept changes nothing. */
  private apply(next: RelayLinkSettings): ConnectStatus {
    this.o.save(next);
    const changed = JSON.stringify({ ...this.settings, enabled: null }) !== JSON.stringify({ ...next, enabled: null });
    const wasOn = this.settings?.enabled ?? false;
    this.settings = next;
    if (!next.enabled) this.close();
    else if (changed || !wasOn || !this.connector) this.redial();
    return this.view();
  }

  private redial(): void {
    const s = this.settings;
    this.close();
    if (!s) return;
    this.connector = new RelayConnector({ target: s, ctx: this.o.ctx, log: this.o.log, version: this.o.version, timings: this.timings });
    this.connector.start();
  }

  /** Existing human accounts, each once, at most RELAY_LIMITS.mailboxes. */
  private async checkMailboxes(list: readonly string[]): Promise<string[]> {
    const out = [...new Set(list)];
    if (out.length > RELAY_LIMITS.mailboxes)
      throw new MailError('too_large', `at most ${RELAY_LIMITS.mailboxes} human mailboxes`, { field: 'human_mailboxes', limit: RELAY_LIMITS.mailboxes, actual: out.length });
    for (const id of out) {
      const a = await this.o.ctx.engine.store.getAccount(id);
      if (!a) throw new MailError('unknown_participant', `no account ${id}`, { participant: id, field: 'human_mailboxes' });
      if (a.kind !== 'human')
        throw new MailError('malformed', `${id} is not a human account (admin account add --kind human)`, { field: 'human_mailboxes', reason: 'not a human account' });
    }
    return out;
  }
}

function operatorOnly(c: Caller): void {
  if (!c.account.permissions.operator) throw new MailError('permission_denied', 'the relay link is set by the operator', { need: 'operator' });
}
