// Process attestation: who is on the other end of a loopback connection, as the kernel says.
// The attest layer knows nothing about accounts or mail; it reports facts about processes.

/** Facts read from the kernel about one process. */
export interface ProcessFacts {
  pid: number;
  /** Clock ticks since boot (field 22 of /proc/PID/stat); (pid, startTime) identifies a process. */
  startTime: number;
  ppid: number;
  uid: number;
  /** Real path of the executable (readlink /proc/PID/exe), or "" when unreadable. */
  exe: string;
}

/** Allow-listed facts corroborated from the session's own command line, cwd, or the environment of a
 *  transparent helper (bridge, hook) that the session spawned. Never the raw command line. */
export interface Corroborated {
  provider?: string;
  provider_session_id?: string;
  model?: string;
  cwd?: string;
}

export interface Attestation {
  /** The session process: the first non-transparent process walking up from the socket's holder. */
  session: ProcessFacts;
  /** The process that actually holds the socket (may equal `session`). */
  peer: ProcessFacts;
  /** `s-` + hex SHA-256 over (host id, boot id, pid, start time). */
  sessionId: string;
  corroborated: Corroborated;
}

export type UnattestedReason =
  | 'unsupported_platform'
  | 'not_loopback'
  | 'connection_closed'
  | 'socket_not_found'
  | 'ambiguous'
  | 'orphaned'
  | 'foreign_chain'
  /** The peer runs as another OS user than the daemon, and the operator did not allow that uid. */
  | 'foreign_user'
  | 'process_gone'
  /** The lookup did not finish in time (the attestation worker was replaced): retry. */
  | 'attestor_unavailable';

/** Attestation outcome: a value, never an exception, so doors map it to a named error. */
export type AttestResult =
  { ok: true; attestation: Attestation } | { ok: false; reason: UnattestedReason; /** Set with `foreign_user` and `foreign_chain`. */ foreignUid?: number };

/** The four numbers that identify a TCP connection, as seen from the daemon's side. */
export interface ConnectionTuple {
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
}

/** What the kernel recorded about the process that connected to a Unix socket (SO_PEERCRED, read
 *  at connect time), and when the daemon accepted the connection. */
export interface PeerCredentials {
  pid: number;
  uid: number;
  gid: number;
}

export interface PeerQuery {
  pid: number;
  /** The uid the kernel recorded at connect: decides foreign_user, and /proc must agree with it. */
  uid: number;
  /** process.hrtime in ms (a monotonic clock every thread shares) when the connection was accepted:
   *  a process started after it did not connect (its pid was reused). */
  acceptedAtHrMs: number;
}

export interface Attestor {
  readonly supported: boolean;
  attest(conn: ConnectionTuple): Promise<AttestResult>;
  /** The same walk from a pid the kernel attested (SO_PEERCRED), without /proc/net or an fd scan;
   *  absent where the platform has no such credential. */
  attestPeer?(peer: PeerQuery): Promise<AttestResult>;
  /** True while the process (pid, startTime) still runs. */
  isAlive(pid: number, startTime: number): boolean;
  /** Ends background work (a worker thread); attest() is not called afterwards. */
  close?(): Promise<void>;
}
