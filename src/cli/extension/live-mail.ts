// The mail4agent extension for pi and omp: one file both programs load (`m4a setup pi|omp` writes
// a two-line stub that imports it). It runs inside the agent's own process, so the daemon attests
// the agent itself; it speaks through node:http (MailClient), never `fetch`, which follows proxy
// variables and would make the daemon attest the proxy. It names its conversation on every request
// (AGENT_SESSION_HEADER): neither program shows that id in its arguments or environment.
//
// Live delivery: one parked `notice {event: "live"}` at a time (it answers only for mail this
// session has not been shown, after the loop guard), each answer injected as one short user
// message: ids, senders, subjects; bodies are read with the tools.
import { AGENT_SESSION_HEADER, AGENT_SESSION_ID, LIVE_WAIT_SECS } from '../../wire/capabilities.js';
import type * as H from '../../wire/hooks.js';
import { TOOLS } from '../../wire/tool-list.js';
import { wakeText } from '../../wire/wake-text.js';
import { DaemonUnreachable, MailClient } from '../../client/http-client.js';
import { ensureDaemon } from '../autostart.js';
import { chooseAccount } from '../credentials.js';
import { daemonSocket, dataDirFrom } from '../daemon-target.js';
import type { AgentApi, AgentContext, SendUserMessageOptions, ToolResult } from './agent-api.js';
import { runMailCommand, MAIL_COMMAND_HELP } from './mail-command.js';

export interface ExtensionOptions {
  /** The account set up for this program (`m4a setup pi --account NAME`). */
  account?: string;
}

const RETRY_MS = [500, 1_000, 2_000, 5_000, 10_000, 30_000];
/** A tool's inbox wait may last 60 s; the request gets that on top of the usual timeout. */
const TOOL_EXTRA_MS = 70_000;

/** The message injected for one batch of mail. */
export const liveText = (n: H.NoticeResponse): string => `📬 ${wakeText(n.mail, n.more)}`;

/** How the batch is delivered: starts a turn when idle; while the agent works, after its reply
 *  (urgent mail steers into the turn). omp frames an unattributed mid-turn message as the user's
 *  interjection: it goes as the agent's. */
export function deliveryOf(n: H.NoticeResponse, idle: boolean, omp: boolean): SendUserMessageOptions {
  const o: SendUserMessageOptions = idle ? {} : { deliverAs: n.mail.some((m) => m.priority === 'urgent') ? 'steer' : 'followUp' };
  if (omp) o.attribution = 'agent';
  return o;
}

export class LiveMail {
  /** Tools and /mail: the agent waits for these answers, so they hold the process as any request does. */
  private client: MailClient | null = null;
  /** The parked live wait: never keeps the agent alive (print mode exits when its turn is done). */
  private waiter: MailClient | null = null;
  private ctx: AgentContext | null = null;
  /** Each start of the loop; a loop of an older generation ends at its next turn. */
  private generation = 0;
  private readonly omp = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined';

  constructor(
    private pi: AgentApi,
    private opts: ExtensionOptions,
    private env: NodeJS.ProcessEnv = process.env,
  ) {}

  install(): void {
    // `m4a` run by the agent's tools then picks this account among several (a name, not a secret).
    if (this.opts.account && !this.env.M4A_ACCOUNT && !this.env.M4A_TOKEN) this.env.M4A_ACCOUNT = this.opts.account;
    for (const t of TOOLS) {
      this.pi.registerTool({
        name: t.name,
        label: t.name,
        description: t.description,
        parameters: t.inputSchema,
        loadMode: 'essential',
        execute: (_id, params) => this.tool(t.name, params),
      });
    }
    this.pi.registerCommand('mail', {
      description: MAIL_COMMAND_HELP,
      handler: async (args, ctx) => {
        const say = (text: string, type: 'info' | 'error' = 'info'): void => ctx.ui?.notify(text, type);
        try {
          say(await runMailCommand(await this.connected(ctx), args));
        } catch (err) {
          if (err instanceof DaemonUnreachable) this.dropClient();
          say(`mail: ${err instanceof Error ? err.message : String(err)}`, 'error');
        }
      },
    });
    // pi: session_start (startup, reload, new, resume, fork); omp: session_start, then
    // session_switch for /new, /resume and forks. The process stays; the conversation changes.
    const attach = (_e: unknown, ctx: AgentContext): void => this.attach(ctx);
    this.pi.on('session_start', attach);
    this.pi.on('session_switch', attach);
    this.pi.on('session_shutdown', () => this.stop());
  }

  private conversation(): string | undefined {
    try {
      return this.ctx?.sessionManager.getSessionId() || undefined;
    } catch {
      return undefined;
    }
  }

  /** The clients, connected to the daemon (started if needed, as `m4a mcp` does). `background`:
   *  the live loop asks, and its waiting must not keep a finished agent alive. */
  private async connect(background = false): Promise<{ client: MailClient; waiter: MailClient }> {
    if (this.client && this.waiter) return { client: this.client, waiter: this.waiter };
    const choice = chooseAccount(this.opts.account, this.env);
    if ('error' in choice) throw new Error(choice.error);
    const dataDir = dataDirFrom(undefined, this.env);
    const url = await ensureDaemon(dataDir, this.env, undefined, { unref: background });
    const socket = daemonSocket(dataDir, url, this.env);
    const headers = (): Record<string, string> => {
      const id = this.conversation();
      // An id the daemon would refuse is left out (the session then has no conversation on its
      // card) rather than making every call fail.
      return id && AGENT_SESSION_ID.test(id) ? { [AGENT_SESSION_HEADER]: id } : {};
    };
    this.client ??= new MailClient({ url, token: choice.secret, headers, socket });
    this.waiter ??= new MailClient({ url, token: choice.secret, headers, socket, unref: true });
    return { client: this.client, waiter: this.waiter };
  }

  private async connected(ctx?: AgentContext): Promise<MailClient> {
    if (ctx) this.ctx = ctx;
    return (await this.connect()).client;
  }

  private dropClient(): void {
    this.client?.close();
    this.client = null;
  }

  private close(): void {
    this.client?.close();
    this.waiter?.close();
    this.client = this.waiter = null;
  }

  private attach(ctx: AgentContext): void {
    this.ctx = ctx;
    const gen = ++this.generation;
    void this.loop(gen);
  }

  private stop(): void {
    this.generation++;
    this.close();
  }

  private async loop(gen: number): Promise<void> {
    let failures = 0;
    while (gen === this.generation) {
      try {
        const { waiter } = await this.connect(true);
        const n = await waiter.notice({ event: 'live', wait_secs: LIVE_WAIT_SECS });
        failures = 0;
        if (gen !== this.generation || n.mail.length === 0) continue;
        this.inject(n);
      } catch {
        // The daemon restarted or is starting: try again, more slowly each time, never spinning.
        // Only the waiter is dropped: a tool call in flight on the other client goes on.
        if (gen !== this.generation) return;
        this.waiter?.close();
        this.waiter = null;
        await new Promise((r) => setTimeout(r, RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)]).unref());
      }
    }
  }

  private inject(n: H.NoticeResponse): void {
    const idle = this.ctx?.isIdle() ?? true;
    try {
      this.pi.sendUserMessage(liveText(n), deliveryOf(n, idle, this.omp));
    } catch (err) {
      this.ctx?.ui?.notify(`mail4agent could not deliver mail: ${err instanceof Error ? err.message : String(err)}`, 'warning');
    }
  }

  /** A tool call goes through the daemon's MCP door, so the model reads exactly what an MCP client reads. */
  private async tool(name: string, args: Record<string, unknown>): Promise<ToolResult> {
    const client = await this.connected();
    let r: { status: number; text: string };
    try {
      r = await client.post('/mcp', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }), TOOL_EXTRA_MS);
    } catch (err) {
      // The daemon went away (or moved): the next call finds it again.
      if (err instanceof DaemonUnreachable && this.client === client) this.dropClient();
      throw err;
    }
    const body = JSON.parse(r.text) as { result?: { content: { type: 'text'; text: string }[]; isError?: boolean }; error?: { message: string } };
    if (!body.result) throw new Error(body.error?.message ?? `mail4agent answered ${r.status}`);
    // A thrown error is what both programs show the model as a failed call.
    if (body.result.isError) throw new Error(body.result.content.map((c) => c.text).join('\n'));
    return { content: body.result.content, details: {} };
  }
}

/** The extension's entry: `export default mail4agent({ account })` in the file setup writes. */
export function mail4agent(opts: ExtensionOptions = {}): (pi: AgentApi) => void {
  return (pi) => new LiveMail(pi, opts).install();
}
