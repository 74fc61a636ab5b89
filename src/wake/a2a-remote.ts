// One remote A2A agent as an `a2a` step names it: its card (read through the guarded fetch, kept
// for 5 minutes, read again after a failure) and SDK clients bound to the one JSON-RPC interface
// the card names, which must pass the same URL rule before anything is sent to it.
import { accessSync, constants } from 'node:fs';
import { isAbsolute } from 'node:path';
import type { AgentCard } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { MailError } from '../wire/errors.js';
import type { A2aStep } from '../wire/wake.js';
import { checkWebhookUrl, type Resolver } from './remote-url.js';
import { A2aUrlRefused, guardedFetch, refusalReason, shownUrl, type GuardOptions } from './a2a-fetch.js';
import { A2A_LIMITS } from './a2a-limits.js';

/** Until a plain request's headers; a blocking SendMessage (plain mail) may take longer. */
export const A2A_TIMEOUTS = { requestMs: 30_000, blockingMs: 120_000, idleMs: 300_000, cardTtlMs: 300_000 } as const;
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** What this step reads back: text and JSON (files are not kept; the mailbox keeps refs only). */
export const OUTPUT_MODES = ['text/plain', 'application/json'];

/** For `m4a wake set`: throws MailError('malformed') naming the field. */
export function checkA2aStep(step: A2aStep): void {
  checkWebhookUrl(step.url, step.allow_remote ?? false);
  const file = step.token_file;
  if (file === undefined) return;
  if (!isAbsolute(file)) throw new MailError('malformed', 'token_file: give an absolute path', { field: 'token_file', reason: 'must be an absolute path' });
  try {
    accessSync(file, constants.R_OK);
  } catch {
    throw new MailError('malformed', 'token_file: the daemon cannot read it', { field: 'token_file', reason: 'cannot be read' });
  }
}

export interface RemoteClients {
  /** For every call but a blocking send: 30 s to the headers. */
  client: Client;
  /** A blocking SendMessage (plain mail): up to 120 s. */
  blocking: Client;
  /** The card says it streams (SubscribeToTask); else the follower polls GetTask. */
  streaming: boolean;
  card: AgentCard;
}

export interface RemoteOptions {
  now(): number;
  resolver?: Resolver;
}

export class A2aRemote {
  private cached: { at: number; clients: Promise<RemoteClients> } | null = null;

  constructor(
    readonly step: A2aStep,
    private readonly o: RemoteOptions,
  ) {}

  clients(): Promise<RemoteClients> {
    const now = this.o.now();
    if (this.cached && now - this.cached.at < A2A_TIMEOUTS.cardTtlMs) return this.cached.clients;
    const clients = this.connect();
    const entry = { at: now, clients };
    this.cached = entry;
    clients.catch(() => {
      if (this.cached === entry) this.cached = null;
    });
    return clients;
  }

  /** After a call that could not reach the agent: the next one reads the card again. */
  forget(): void {
    this.cached = null;
  }

  private async connect(): Promise<RemoteClients> {
    // Loaded on first use: a daemon without a2a steps never loads the SDK.
    const sdk = await import('@a2a-js/sdk/client');
    const allowRemote = this.step.allow_remote ?? false;
    const cardOrigin = new URL(this.step.url).origin;
    const base: Omit<GuardOptions, 'headersTimeoutMs'> = {
      allowRemote,
      idleTimeoutMs: A2A_TIMEOUTS.idleMs,
      maxBodyBytes: MAX_BODY_BYTES,
      maxStreamBytes: A2A_LIMITS.streamBytes,
      ...(this.step.token_file !== undefined ? { token: { file: this.step.token_file, origin: cardOrigin } } : {}),
      ...(this.o.resolver ? { resolver: this.o.resolver } : {}),
    };
    const quick = guardedFetch({ ...base, headersTimeoutMs: A2A_TIMEOUTS.requestMs });
    const card = await new sdk.DefaultAgentCardResolver({ fetchImpl: quick }).resolve(this.step.url, '');
    const rpc = (card.supportedInterfaces ?? []).filter((i) => i.protocolBinding.toUpperCase() === 'JSONRPC');
    const iface = rpc.find((i) => i.protocolVersion === '1.0') ?? rpc[0];
    if (!iface) throw new Error(`the card at ${shownUrl(this.step.url)} names no JSON-RPC interface (the only binding this step speaks)`);
    // Refused here, before any request to it, with a reason; the guarded fetch checks again at
    // each request (and checks what a remote name resolves to then).
    try {
      checkWebhookUrl(iface.url, allowRemote);
    } catch (err) {
      throw new A2aUrlRefused(`the card's interface ${shownUrl(iface.url)} refused: ${refusalReason(err)}`);
    }
    if (base.token && new URL(iface.url).origin !== cardOrigin)
      throw new A2aUrlRefused(`the card's interface ${shownUrl(iface.url)} is not on the card's origin ${cardOrigin}: the token is sent to that origin only`);
    // Only the JSON-RPC transport, only with the guarded fetch, only the interface checked.
    const only: AgentCard = { ...card, supportedInterfaces: [iface] };
    const make = (fetchImpl: typeof fetch): Promise<Client> =>
      new sdk.ClientFactory({
        transports: [new sdk.JsonRpcTransportFactory({ fetchImpl })],
        clientConfig: { polling: true, acceptedOutputModes: OUTPUT_MODES },
      }).createFromAgentCard(only);
    const [client, blocking] = await Promise.all([make(quick), make(guardedFetch({ ...base, headersTimeoutMs: A2A_TIMEOUTS.blockingMs }))]);
    return { client, blocking, streaming: card.capabilities?.streaming === true, card: only };
  }
}

/** An error the remote agent answered with (a JSON-RPC error: A2A's task not found, not
 *  cancelable …), as opposed to not reaching it. */
export function remoteRefusal(err: unknown): { name: string; code: number; message: string } | null {
  for (let e: unknown = err, depth = 0; e && depth < 3; e = (e as { cause?: unknown }).cause, depth++) {
    const x = e as { envelopeCode?: unknown; name?: unknown; message?: unknown };
    if (typeof x.envelopeCode === 'number')
      return { name: typeof x.name === 'string' ? x.name : 'A2AError', code: x.envelopeCode, message: typeof x.message === 'string' ? x.message : '' };
  }
  return null;
}

/** Why a call failed, for a receipt's detail or the log: never a body or a secret. */
export function failureText(err: unknown): string {
  const r = remoteRefusal(err);
  if (r) return `the remote agent answered ${r.name} (${r.code}): ${r.message}`.slice(0, 300);
  const e = err as { message?: unknown; cause?: { code?: unknown; message?: unknown } };
  const cause = e.cause && typeof e.cause.code === 'string' ? ` (${e.cause.code})` : '';
  // The SDK quotes the response body after "Response:": left out.
  const message = (typeof e.message === 'string' ? e.message : String(err)).replace(/\. Response: [\s\S]*$| Response: [\s\S]*$/, '');
  return `${message}${cause}`.slice(0, 300);
}
