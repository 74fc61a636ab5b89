// Who is calling: the credential names the account, the kernel names the process. Attestation
// runs once per connection, only after the connection's first request presented a credential that
// verifies (an idle or anonymous connection costs no /proc lookup), and is cached on the socket; a
// failure is refused by name.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { AGENT_SESSION_HEADER, AGENT_SESSION_ID } from '../../wire/capabilities.js';
import { MailError } from '../../wire/errors.js';
import type { Attestor, AttestResult } from '../../attest/types.js';
import type { Caller, MailEngine } from '../../engine/mail-engine.js';

export class CallerResolver {
  private perSocket = new WeakMap<Socket, Promise<AttestResult>>();

  constructor(
    private engine: MailEngine,
    private attestor: Attestor,
    /** Told when a connection's credential verified and its process was attested (it leaves the
     *  unproven bound). */
    private onProven: (socket: Socket) => void = () => undefined,
  ) {}

  private attestSocket(socket: Socket): Promise<AttestResult> {
    let p = this.perSocket.get(socket);
    if (!p) {
      const { localAddress, localPort, remoteAddress, remotePort } = socket;
      p =
        localAddress && localPort && remoteAddress && remotePort
          ? this.attestor.attest({ localAddress, localPort, remoteAddress, remotePort }).catch((): AttestResult => ({ ok: false, reason: 'socket_not_found' }))
          : Promise.resolve({ ok: false, reason: 'connection_closed' });
      this.perSocket.set(socket, p);
    }
    return p;
  }

  private async attested(req: IncomingMessage): Promise<AttestResult & { ok: true }> {
    if (!this.attestor.supported) throw new MailError('unattested', 'process attestation is not implemented on this platform', { reason: 'unsupported_platform' });
    const r = await this.attestSocket(req.socket);
    if (r.ok) return r;
    throw attestationRefusal(r);
  }

  /** A mail caller: verified account plus attested session. */
  async mail(req: IncomingMessage): Promise<Caller> {
    const account = await this.engine.verify(bearer(req));
    const att = await this.attested(req);
    this.onProven(req.socket);
    return this.engine.callerFor(account, att.attestation, reportedSession(req));
  }

  /** An operator caller: a verified account; where attestation exists, the peer must be ours. */
  async admin(req: IncomingMessage): Promise<Caller> {
    const account = await this.engine.verify(bearer(req));
    if (this.attestor.supported) await this.attested(req);
    this.onProven(req.socket);
    return { account, session: null };
  }
}

/** The named error for a connection that could not be attested (every door refuses it the same way). */
export function attestationRefusal(r: AttestResult & { ok: false }): MailError {
  if (r.reason === 'foreign_user') return new MailError('foreign_user', 'the connecting process belongs to another OS user', {});
  return new MailError('unattested', `the connection could not be attested: ${r.reason}`, { reason: r.reason });
}

/** The conversation id a pi or omp extension names (the engine takes it only from such a process). */
function reportedSession(req: IncomingMessage): string | undefined {
  const v = req.headers[AGENT_SESSION_HEADER];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !AGENT_SESSION_ID.test(v))
    throw new MailError('malformed', `${AGENT_SESSION_HEADER} must be one token of letters, digits and . _ : - (at most 128)`, { field: AGENT_SESSION_HEADER, reason: 'pattern' });
  return v;
}

function bearer(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  if (!h) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1];
}
