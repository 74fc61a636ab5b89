// The mail4agent plugin for opencode (`m4a setup opencode` writes a stub that imports it). The
// tools come from our MCP server (`mcp.m4a`); this plugin only brings new mail into the session.
// It runs inside the opencode process, so the daemon attests opencode itself, and it names the
// opencode session it delivers to on every request (AGENT_SESSION_HEADER): opencode shows that id
// in neither its arguments nor its environment. It speaks through node:http (MailClient), never
// `fetch`, which follows proxy variables and would make the daemon attest the proxy.
//
// Delivery: one parked `notice {event: "live"}` at a time, as in pi and omp (the daemon answers only
// for mail this session was not shown, after the loop guard); each answer goes to the session as
// one short user message with `client.session.promptAsync`. An idle session starts a turn; a busy
// one gets it after the running tool's result (opencode appends a prompt to a running loop).
// Mail that could not be given yet (no session seen, or the prompt failed) is given at the next
// `session.idle`.
import { AGENT_SESSION_HEADER, AGENT_SESSION_ID, LIVE_WAIT_SECS } from '../../wire/capabilities.js';
import type * as H from '../../wire/hooks.js';
import { MailClient } from '../../client/http-client.js';
import { ensureDaemon } from '../autostart.js';
import { chooseAccount } from '../credentials.js';
import { daemonSocket, dataDirFrom } from '../daemon-target.js';
import { liveText } from './live-mail.js';

/** The part of opencode's plugin input used here (@opencode-ai/plugin's PluginInput, structurally). */
export interface OpencodeInput {
  client: {
    session: {
      promptAsync(o: { path: { id: string }; body: { parts: { type: 'text'; text: string }[] } }): Promise<{ error?: unknown } | undefined>;
    };
  };
  directory?: string;
}

export interface OpencodeEvent {
  type: string;
  properties?: { sessionID?: string; info?: { id?: string; parentID?: string } };
}

export interface OpencodeHooks {
  event(input: { event: OpencodeEvent }): Promise<void>;
  'chat.message'(input: { sessionID?: string }, output: unknown): Promise<void>;
}

export interface PluginOptions {
  /** The account set up for opencode (`m4a setup opencode --account NAME`). */
  account?: string;
}

const RETRY_MS = [500, 1_000, 2_000, 5_000, 10_000, 30_000];
/** Undelivered batches kept for the next idle; older ones go (the mail stays in the inbox). */
const PENDING_MAX = 8;

export class OpencodeMail {
  private waiter: MailClient | null = null;
  /** The top-level session mail goes to: the last one a person (or a prompt) spoke in. */
  private session: string | null = null;
  /** Sub-agent sessions (task tool): never the target. */
  private children = new Set<string>();
  private pending: string[] = [];
  private running = false;
  private flushing = false;
  private stopped = false;

  constructor(
    private input: OpencodeInput,
    private opts: PluginOptions,
    private env: NodeJS.ProcessEnv = process.env,
  ) {}

  hooks(): OpencodeHooks {
    return {
      event: async ({ event }) => this.onEvent(event),
      'chat.message': async (input) => {
        if (input.sessionID) this.use(input.sessionID);
      },
    };
  }

  /** The session mail goes to now (tests and the daemon's card read it). */
  current(): string | null {
    return this.session;
  }

  stop(): void {
    this.stopped = true;
    this.waiter?.close();
    this.waiter = null;
  }

  private onEvent(e: OpencodeEvent): void {
    const p = e.properties ?? {};
    if (e.type === 'session.created' && p.info?.id && p.info.parentID) this.children.add(p.info.id);
    if (e.type === 'session.deleted' && p.info?.id === this.session) this.session = null;
    if (e.type === 'session.idle' && p.sessionID) {
      if (!this.session) this.use(p.sessionID);
      if (p.sessionID === this.session) void this.flush();
    }
  }

  private use(id: string): void {
    if (this.children.has(id) || !AGENT_SESSION_ID.test(id)) return;
    this.session = id;
    if (!this.running && !this.stopped) {
      this.running = true;
      void this.loop();
    }
  }

  private async connect(): Promise<MailClient> {
    if (this.waiter) return this.waiter;
    const choice = chooseAccount(this.opts.account, this.env);
    if ('error' in choice) throw new Error(choice.error);
    const dataDir = dataDirFrom(undefined, this.env);
    // The wait must never keep a finished `opencode run` alive.
    const url = await ensureDaemon(dataDir, this.env, undefined, { unref: true });
    const headers = (): Record<string, string> => (this.session ? { [AGENT_SESSION_HEADER]: this.session } : {});
    this.waiter = new MailClient({ url, token: choice.secret, headers, socket: daemonSocket(dataDir, url, this.env), unref: true });
    return this.waiter;
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        const n: H.NoticeResponse = await (await this.connect()).notice({ event: 'live', wait_secs: LIVE_WAIT_SECS });
        failures = 0;
        if (this.stopped || n.mail.length === 0) continue;
        this.pending = [...this.pending, liveText(n)].slice(-PENDING_MAX);
        await this.flush();
      } catch {
        // The daemon restarted or is starting: again, more slowly each time, never spinning.
        if (this.stopped) return;
        this.waiter?.close();
        this.waiter = null;
        await new Promise((r) => setTimeout(r, RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)]).unref());
      }
    }
  }

  /** Gives every waiting batch to the session, in order; what fails waits for the next idle. */
  private async flush(): Promise<void> {
    // One at a time: a flush under way gives what arrives meanwhile too.
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.session && this.pending.length > 0) {
        const r = await this.input.client.session
          .promptAsync({ path: { id: this.session }, body: { parts: [{ type: 'text', text: this.pending[0]! }] } })
          .catch((err: unknown) => ({ error: err }));
        if (r?.error) return;
        this.pending.shift();
      }
    } finally {
      this.flushing = false;
    }
  }
}

/** The plugin: `export const Mail4agent = mail4agent({ account })` in the file setup writes. */
export function mail4agent(opts: PluginOptions = {}): (input: OpencodeInput) => Promise<OpencodeHooks> {
  return async (input) => {
    // `m4a` run by opencode's bash tool then picks this account among several (a name, not a secret).
    if (opts.account && !process.env.M4A_ACCOUNT && !process.env.M4A_TOKEN) process.env.M4A_ACCOUNT = opts.account;
    return new OpencodeMail(input, opts).hooks();
  };
}
