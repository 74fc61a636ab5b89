// The client's own failures (the daemon's named errors arrive as MailError from the wire layer).

/** The daemon's port is held by a process of another OS user: the secret was not sent. */
export class PortOwnedByOtherUser extends Error {
  constructor(
    readonly url: string,
    readonly uid: number,
  ) {
    super(`the process listening at ${url} belongs to uid ${uid}, not to you; the secret was not sent`);
    this.name = 'PortOwnedByOtherUser';
  }
}

/** The daemon could not be reached at all (nothing listening, connection reset). `url` is the
 *  HTTP address or, on the stream door, the socket's path. */
export class DaemonUnreachable extends Error {
  constructor(
    readonly url: string,
    override readonly cause: unknown,
  ) {
    super(`no mail4agent daemon answers at ${url}`);
    this.name = 'DaemonUnreachable';
  }
}

/** The stream door could not be used (no socket file, nobody listening, another user's file, the
 *  connection closed before hello): the request was not sent, so HTTP may carry it instead.
 *  `lasting`: the next attempt would fail the same way (so a client that reached the daemon over
 *  HTTP stops trying the socket). */
export class StreamUnavailable extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
    readonly lasting: boolean,
    override readonly cause?: unknown,
  ) {
    super(`the stream door at ${path} cannot be used: ${reason}`);
    this.name = 'StreamUnavailable';
  }
}
