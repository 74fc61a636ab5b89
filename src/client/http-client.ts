// A typed client for the daemon over HTTP keep-alive, or over the stream door (a Unix socket) when
// given the daemon's socket, falling back to HTTP (stream-route.ts). It imports only the wire
// layer, so it can become its own package. Named errors from the daemon come back as MailError
// with their inputs, whichever door carried them.
import type { SearchRequest as SearchInput, SearchResponse } from '../wire/search.js';
import type { WaitForRequest, WaitForResponse } from '../wire/wait-for.js';
import type { AttachmentResponse } from '../wire/email-attachment.js';
import type { Agent } from 'node:http';
import { createRequire } from 'node:module';
import { AGENT_SESSION_HEADER } from '../wire/capabilities.js';
import { MailError, errorFromBody } from '../wire/errors.js';
import type * as W from '../wire/ops.js';
import type * as A from '../wire/admin.js';
import type * as H from '../wire/hooks.js';
import type * as WK from '../wire/wake.js';
import type * as IM from '../wire/import-omp-mail.js';
import type * as IMX from '../wire/import-mail.js';
import type * as T from '../wire/tasks.js';
import type * as L from '../wire/leases.js';
import type * as LT from '../wire/lease-tool.js';
import type * as TM from '../wire/teams.js';
import type * as CT from '../wire/contacts.js';
import type * as RT from '../wire/retention.js';
import type { Address } from '../wire/address.js';
import { pathOf } from '../wire/operation-facts.js';
import { portOwner } from './port-owner.js';
import { DaemonUnreachable, PortOwnedByOtherUser, StreamUnavailable } from './errors.js';
import { StreamRoute, asHttp } from './stream-route.js';
import type { MailEvent, RequestOptions, SubscribeOptions } from './stream-transport.js';

export { DaemonUnreachable, PortOwnedByOtherUser, StreamUnavailable };
export type { MailEvent, SubscribeOptions };

export interface ClientOptions {
  /** e.g. http://127.0.0.1:7341 */
  url: string;
  token: string;
  /** Per-request timeout in ms (waits add their own wait time). Default 30 s. */
  timeoutMs?: number;
  /** Refuse to send the secret when another OS user owns the listening port (Linux). Default true. */
  checkPortOwner?: boolean;
  /** Headers added to every request, read each time (the pi/omp extension names its conversation). */
  headers?: () => Record<string, string>;
  /** Let the process exit while a request (a parked wait) is open: an extension inside an agent
   *  must never keep the agent alive. */
  unref?: boolean;
  /** The daemon's m4a.sock (daemon.json's `socket`): requests go over the stream door while it
   *  can be used, else over HTTP. The secret goes there only when the socket file is ours. */
  socket?: string;
  /** Named in the stream's hello (name/version). */
  clientName?: string;
}

export interface Health {
  ok: boolean;
  name: string;
  version: string;
  pid: number;
  attestation: boolean;
  store: string;
}

export type SendInput = Omit<W.SendRequest, 'to'> & { to: string | Address };
export type TaskCreateInput = Omit<T.TaskCreateRequest, 'to'> & { to: string | Address };
export type ApprovalRequestInput = Omit<T.ApprovalRequest, 'reviewer'> & { reviewer: string | Address };

const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

/** node:http, loaded on the first HTTP request: a client that talks over the stream door (a cold
 *  `m4a send`) never pays for loading it. */
let httpModule: typeof import('node:http') | null = null;
const http = (): typeof import('node:http') => (httpModule ??= createRequire(import.meta.url)('node:http') as typeof import('node:http'));

export class MailClient {
  private agentMade: Agent | null = null;
  private get agent(): Agent {
    return (this.agentMade ??= new (http().Agent)({ keepAlive: true, maxSockets: 8 }));
  }
  private base: URL;
  private ownerChecked: boolean;
  private stream: StreamRoute | null;

  get url(): string {
    return this.o.url;
  }

  constructor(private o: ClientOptions) {
    this.base = new URL(o.url);
    this.ownerChecked = o.checkPortOwner === false;
    this.stream = o.socket
      ? new StreamRoute({
          path: o.socket,
          token: o.token,
          timeoutMs: o.timeoutMs ?? 30_000,
          ...(o.unref ? { unref: true } : {}),
          ...(o.clientName ? { clientName: o.clientName } : {}),
        })
      : null;
  }

  /** Whether requests may still go over the stream door (false: no socket given, or gone over to HTTP). */
  get streaming(): boolean {
    return this.stream?.usable ?? false;
  }

  private streamOpts(extraTimeoutMs: number, signal: AbortSignal | undefined): RequestOptions {
    return { timeoutMs: (this.o.timeoutMs ?? 30_000) + extraTimeoutMs, agentSession: this.o.headers?.()[AGENT_SESSION_HEADER], signal };
  }

  private checkOwner(): void {
    if (this.ownerChecked) return;
    const port = Number(this.base.port || 80);
    const owner = portOwner(this.base.hostname.replace(/^\[|\]$/g, ''), port);
    if (owner.kind === 'other') throw new PortOwnedByOtherUser(this.o.url, owner.uid);
    // 'none' (nothing listening) is left to the connection attempt, which reports it.
    if (owner.kind !== 'none') this.ownerChecked = true;
  }

  /** POST a JSON body to a route and return the parsed answer, or throw MailError / DaemonUnreachable.
   *  `signal`: the caller gives up (the request ends at the daemon too). */
  async call<T>(path: string, body: unknown = {}, extraTimeoutMs = 0, signal?: AbortSignal): Promise<T> {
    const a = await this.stream?.exchange(path, body, this.streamOpts(extraTimeoutMs, signal));
    if (a) {
      if ('error' in a) throw errorFromBody(a, 0);
      return a.result as T;
    }
    const r = await this.httpPost(path, JSON.stringify(body), extraTimeoutMs, signal);
    let parsed: unknown = undefined;
    try {
      parsed = r.text ? JSON.parse(r.text) : undefined;
    } catch {
      /* not JSON: reported below */
    }
    if (r.status === 200) return parsed as T;
    throw errorFromBody(parsed, r.status);
  }

  /** POST a raw JSON text and return status and text as they came (the stdio bridge forwards them;
   *  over the stream, /mcp is its "mcp" operation and the answer is what HTTP would have said). */
  async post(path: string, payload: string, extraTimeoutMs = 0, signal?: AbortSignal): Promise<{ status: number; text: string }> {
    if (this.stream?.usable) {
      let input: unknown;
      try {
        input = JSON.parse(payload);
      } catch {
        /* not JSON: HTTP names the error */
      }
      const a = input === undefined ? null : await this.stream.exchange(path, input, this.streamOpts(extraTimeoutMs, signal));
      if (a) return asHttp(path, a);
    }
    return this.httpPost(path, payload, extraTimeoutMs, signal);
  }

  private httpPost(path: string, payload: string, extraTimeoutMs: number, signal: AbortSignal | undefined): Promise<{ status: number; text: string }> {
    try {
      this.checkOwner();
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    return new Promise((resolve, reject) => {
      const req = http().request(
        {
          agent: this.agent,
          host: this.base.hostname.replace(/^\[|\]$/g, ''),
          port: this.base.port,
          path,
          method: 'POST',
          timeout: (this.o.timeoutMs ?? 30_000) + extraTimeoutMs,
          ...(signal ? { signal } : {}),
          headers: {
            host: this.base.host,
            authorization: `Bearer ${this.o.token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
            ...this.o.headers?.(),
          },
        },
        (res) => {
          this.stream?.httpAnswered();
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', (e) => reject(new DaemonUnreachable(this.o.url, e)));
        },
      );
      req.on('timeout', () => req.destroy(new MailError('internal', 'the daemon did not answer in time')));
      req.on('error', (e) => reject(signal?.aborted ? asError(signal.reason) : e instanceof MailError ? e : new DaemonUnreachable(this.o.url, e)));
      if (this.o.unref) req.on('socket', (s) => s.unref());
      req.end(payload);
    });
  }

  /** GET /health: needs no secret, so it is safe before the port owner is known. */
  health(timeoutMs = 2000): Promise<Health> {
    return new Promise((resolve, reject) => {
      const req = http().request(
        {
          agent: this.agent,
          host: this.base.hostname.replace(/^\[|\]$/g, ''),
          port: this.base.port,
          path: '/health',
          method: 'GET',
          timeout: timeoutMs,
          headers: { host: this.base.host },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString('utf8')));
          res.on('end', () => {
            try {
              const body = JSON.parse(text) as Health;
              if (res.statusCode === 200 && body.name === 'mail4agent') resolve(body);
              else reject(new DaemonUnreachable(this.o.url, new Error(`HTTP ${res.statusCode} from something that is not mail4agent`)));
            } catch (e) {
              reject(new DaemonUnreachable(this.o.url, e));
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (e) => reject(new DaemonUnreachable(this.o.url, e)));
      req.end();
    });
  }

  send(input: SendInput): Promise<W.SendResponse> {
    return this.call(pathOf('send'), input);
  }
  inbox(input: W.InboxRequest = {}, signal?: AbortSignal): Promise<W.InboxResponse> {
    return this.call(pathOf('inbox'), input, (input.wait_secs ?? 0) * 1000, signal);
  }
  ack(ids: string | string[]): Promise<W.AckResponse> {
    return this.call(pathOf('ack'), Array.isArray(ids) ? { message_ids: ids } : { message_id: ids });
  }
  /** `verbose`: every field of each message (null and default ones too), for scripts. */
  get(messageId: string, thread = false, verbose = false): Promise<W.GetResponse> {
    return this.call(pathOf('get'), { message_id: messageId, ...(thread ? { thread: true } : {}), ...(verbose ? { verbose: true } : {}) });
  }
  /** The next matching mail that arrives after the call, with its codes and links (null on a timeout). */
  waitFor(input: WaitForRequest, signal?: AbortSignal): Promise<WaitForResponse> {
    return this.call(pathOf('wait_for'), input, input.timeout_secs * 1000, signal);
  }

  /** One kept attachment of an e-mail from outside (base64 bytes; untrusted). */
  attachment(messageId: string, n: number): Promise<AttachmentResponse> {
    return this.call(pathOf('attachment'), { message_id: messageId, n });
  }
  /** Full-text search of the mail this caller may read, newest first. */
  search(input: SearchInput): Promise<SearchResponse> {
    return this.call(pathOf('search'), input);
  }
  unread(): Promise<W.UnreadResponse> {
    return this.call(pathOf('unread'));
  }
  whoami(): Promise<W.WhoamiResponse> {
    return this.call(pathOf('whoami'));
  }
  status(input: W.StatusRequest): Promise<W.StatusResponse> {
    return this.call(pathOf('status'), input);
  }
  /** Live sessions by default; `detail` adds ids and cards, `include_ended` the ended ones. */
  directory(input: W.DirectoryRequest & { detail: true }): Promise<W.DirectoryDetail>;
  directory(input?: W.DirectoryRequest): Promise<W.DirectoryResponse>;
  directory(input: W.DirectoryRequest = {}): Promise<W.DirectoryResponse | W.DirectoryDetail> {
    return this.call(pathOf('directory'), input);
  }
  /** Answers a message (to its sender; room mail to the room) and acknowledges it unless ack is false. */
  reply(input: W.ReplyRequest): Promise<W.ReplyResponse> {
    return this.call(pathOf('reply'), input);
  }
  notice(input: H.NoticeRequest, signal?: AbortSignal): Promise<H.NoticeResponse> {
    return this.call(pathOf('notice'), input, (input.wait_secs ?? 0) * 1000, signal);
  }

  /** Pushed mail over the stream door (mail this session may read committed after `after`, default
   *  now), resumed from the last cursor after the daemon restarts. Over HTTP there is no push:
   *  rejects StreamUnavailable, and the caller parks inbox waits instead. */
  subscribe(onMail: (e: MailEvent) => void, o: SubscribeOptions = {}): Promise<{ cursor: string }> {
    if (!this.stream?.usable) return Promise.reject(new StreamUnavailable(this.o.socket ?? '(none)', 'this client goes over HTTP', true));
    return this.stream.transport.subscribe(onMail, { agentSession: () => this.o.headers?.()[AGENT_SESSION_HEADER], ...o });
  }
  unsubscribe(): Promise<void> {
    return this.stream?.transport.unsubscribe() ?? Promise.resolve();
  }
  listen(on: boolean): Promise<{ address: string; listening: boolean }> {
    return this.call(pathOf('listen'), { on });
  }
  /** A durable reminder, delivered as mail from `mailbox` in inSecs (to this session, or the account). */
  remind(inSecs: number, note: string, account = false): Promise<WK.TimerOut> {
    return this.call(pathOf('remind'), account ? { in_secs: inSecs, note, account } : { in_secs: inSecs, note });
  }
  timers(): Promise<{ timers: WK.TimerOut[] }> {
    return this.call(pathOf('timer.list'));
  }
  timerSnooze(id: string, inSecs: number): Promise<WK.TimerOut> {
    return this.call(pathOf('timer.snooze'), { id, in_secs: inSecs });
  }
  timerClear(id: string): Promise<{ ok: true }> {
    return this.call(pathOf('timer.clear'), { id });
  }
  receipts(messageId: string): Promise<WK.ReceiptsResponse> {
    return this.call(pathOf('receipts'), { message_id: messageId });
  }

  /** Tasks (docs/tasks.md): every change is also mail in the task's thread. */
  readonly task = {
    create: (input: TaskCreateInput): Promise<T.TaskOut> => this.call(pathOf('task.create'), input),
    /** With wait_secs and after_version, parks until the task's version passes after_version. */
    get: (input: T.TaskGetRequest): Promise<T.TaskOut> => this.call(pathOf('task.get'), input, (input.wait_secs ?? 0) * 1000),
    list: (input: T.TaskListRequest): Promise<T.TaskListResponse> => this.call(pathOf('task.list'), input),
    update: (input: T.TaskUpdateRequest): Promise<T.TaskOut> => this.call(pathOf('task.update'), input),
    cancel: (input: T.TaskCancelRequest): Promise<T.TaskOut> => this.call(pathOf('task.cancel'), input),
    claim: (input: T.TaskClaimRequest): Promise<T.TaskClaimResponse> => this.call(pathOf('task.claim'), input),
  };

  /** Approvals the mailbox records and never executes. */
  readonly approval = {
    request: (input: ApprovalRequestInput): Promise<T.ApprovalOut> => this.call(pathOf('approval.request'), input),
    decide: (input: T.ApprovalDecideRequest): Promise<T.ApprovalOut> => this.call(pathOf('approval.decide'), input),
    /** With wait_secs, parks until the approval is decided (or expires). */
    get: (input: T.ApprovalGetRequest): Promise<T.ApprovalOut> => this.call(pathOf('approval.get'), input, (input.wait_secs ?? 0) * 1000),
  };

  /** Leases (docs/leases.md): claims that expire, on files (path:<glob> under a root) or pooled tasks. */
  readonly lease = {
    /** lease_conflict names the holders; too_many_leases past 64 per session. */
    claim: (input: L.LeaseClaimRequest): Promise<L.LeaseOut> => this.call(pathOf('lease.claim'), input),
    renew: (input: L.LeaseRenewRequest): Promise<L.LeaseOut> => this.call(pathOf('lease.renew'), input),
    release: (input: L.LeaseReleaseRequest): Promise<L.LeaseOut> => this.call(pathOf('lease.release'), input),
    list: (input: L.LeaseListRequest = {}): Promise<L.LeaseListResponse> => this.call(pathOf('lease.list'), input),
    /** Which of these paths (relative to root) other sessions hold exclusively: the commit guard's question. */
    check: (input: L.LeaseCheckRequest): Promise<L.LeaseCheckResponse> => this.call(pathOf('lease.check'), input),
    /** Several globs of one root claimed together, all or none (`m4a reserve`). */
    reserve: ({ mode, ...input }: LT.ReserveClaimRequest): Promise<L.LeaseListResponse> =>
      this.call(pathOf('reserve'), { action: 'claim', ...input, ...(mode ? { shared: mode === 'shared' } : {}) }),
  };

  /** Teams (docs/teams.md): a member's view; a leader with team.manage_members adds and removes
   *  members; one with timer.schedule_team sets a team reminder. */
  readonly team = {
    show: (team: string): Promise<TM.TeamActionResponse> => this.call(pathOf('team'), { action: 'show', team }),
    memberAdd: (team: string, account: string): Promise<TM.TeamActionResponse> => this.call(pathOf('team'), { action: 'member-add', team, account }),
    memberRemove: (team: string, account: string): Promise<TM.TeamActionResponse> => this.call(pathOf('team'), { action: 'member-remove', team, account }),
    remind: (input: TM.TeamTimerRequest): Promise<TM.TeamTimerResponse> => this.call(pathOf('timer.team'), input),
  };

  /** Who may write to this account, and contact requests (docs/teams.md). */
  readonly contacts = {
    list: (): Promise<CT.ContactsListResponse> => this.call(pathOf('contacts.list')),
    add: (account: string): Promise<CT.ContactAddResponse> => this.call(pathOf('contacts.add'), { account }),
    remove: (account: string): Promise<{ ok: true }> => this.call(pathOf('contacts.remove'), { account }),
    accept: (account: string): Promise<CT.ContactAddResponse> => this.call(pathOf('contacts.accept'), { account }),
    decline: (account: string): Promise<CT.ContactDeclineResponse> => this.call(pathOf('contacts.decline'), { account }),
    setPolicy: (policy: CT.ContactPolicy): Promise<CT.PolicyOut> => this.call(pathOf('policy.set'), { policy }),
  };

  /** Quiet hours: without mode, reads the current one. */
  attention(input: CT.AttentionRequest = {}): Promise<CT.AttentionOut> {
    return this.call(pathOf('attention'), input);
  }

  readonly admin = {
    accountAdd: (input: A.AccountAddRequest): Promise<{ account: A.AccountOut; secret: string }> => this.call(pathOf('account.add'), input),
    accountRotate: (id: string): Promise<{ account: A.AccountOut; secret: string }> => this.call(pathOf('account.rotate'), { id }),
    accountRemove: (id: string): Promise<A.RemovedResponse> => this.call(pathOf('account.remove'), { id }),
    accountList: (): Promise<{ accounts: A.AccountOut[] }> => this.call(pathOf('account.list')),
    roomAdd: (name: string, opts: { everyone?: boolean; open?: boolean } = {}): Promise<{ ok: true }> =>
      this.call(pathOf('room.add'), { name, ...(opts.everyone ? { everyone: true } : {}), ...(opts.open ? { open: true } : {}) }),
    roomSet: (name: string, open: boolean): Promise<{ ok: true }> => this.call(pathOf('room.set'), { name, open }),
    roomRemove: (name: string): Promise<A.RemovedResponse> => this.call(pathOf('room.remove'), { name }),
    roomList: (): Promise<A.RoomListResponse> => this.call(pathOf('room.list')),
    memberAdd: (room: string, account: string): Promise<{ ok: true }> => this.call(pathOf('room.member.add'), { room, account }),
    memberRemove: (room: string, account: string): Promise<{ ok: true }> => this.call(pathOf('room.member.remove'), { room, account }),
    teamCreate: (input: TM.TeamCreateRequest): Promise<TM.TeamOut> => this.call(pathOf('team.create'), input),
    teamMemberAdd: (team: string, account: string): Promise<TM.TeamOut> => this.call(pathOf('team.member.add'), { team, account }),
    teamMemberRemove: (team: string, account: string): Promise<TM.TeamOut> => this.call(pathOf('team.member.remove'), { team, account }),
    teamLeaderAdd: (team: string, account: string): Promise<TM.TeamOut> => this.call(pathOf('team.leader.add'), { team, account }),
    teamLeaderRemove: (team: string, account: string): Promise<TM.TeamOut> => this.call(pathOf('team.leader.remove'), { team, account }),
    teamGrant: (input: TM.TeamGrantRequest): Promise<TM.TeamOut> => this.call(pathOf('team.grant'), input),
    teamRevoke: (input: TM.TeamGrantRequest): Promise<TM.TeamOut> => this.call(pathOf('team.revoke'), input),
    teamList: (): Promise<TM.TeamListResponse> => this.call(pathOf('team.list')),
    teamShow: (input: TM.TeamShowRequest): Promise<TM.TeamShowResponse> => this.call(pathOf('team.show'), input),
    policySet: (account: string, policy: CT.ContactPolicy): Promise<CT.PolicyOut> => this.call(pathOf('account.policy'), { account, policy }),
    retentionSet: (input: RT.RetentionSetRequest): Promise<RT.RetentionSetResponse> => this.call(pathOf('retention.set'), input),
    retentionList: (): Promise<RT.RetentionListResponse> => this.call(pathOf('retention.list')),
    retentionRun: (): Promise<RT.RetentionRunOut> => this.call(pathOf('retention.run')),
    listenerSet: (account: string, url: string): Promise<{ ok: true }> => this.call(pathOf('listener.set'), { account, url }),
    listenerRemove: (account: string): Promise<{ ok: true }> => this.call(pathOf('listener.remove'), { account }),
    wakeSet: (input: WK.WakeSetInput): Promise<{ chain: WK.WakeChainOut; webhook_signing_key?: string }> => this.call(pathOf('wake.set'), input),
    wakeList: (): Promise<{ chains: WK.WakeChainOut[] }> => this.call(pathOf('wake.list')),
    wakeClear: (account: string, session?: string): Promise<{ ok: true }> => this.call(pathOf('wake.clear'), session ? { account, session } : { account }),
    /** One request of an import (the CLI splits a large one); the daemon may take a while. */
    importOmpMail: (input: IM.ImportOmpMailRequest): Promise<IM.ImportOmpMailResponse> => this.call(pathOf('import.omp-mail'), input, 90_000),
    importInterAgentMail: (input: IMX.ImportMailRequest): Promise<IMX.ImportMailResponse> => this.call(pathOf('import.interagentmail'), input, 90_000),
    importAgentMail: (input: IMX.ImportMailRequest): Promise<IMX.ImportMailResponse> => this.call(pathOf('import.agent-mail'), input, 90_000),
  };

  close(): void {
    this.agentMade?.destroy();
    this.stream?.close();
  }
}
