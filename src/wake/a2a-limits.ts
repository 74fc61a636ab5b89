// Every bound a remote A2A agent meets, in one place: the remote is untrusted, so what it can make
// the daemon hold (artifact parts), read (stream bytes), say (mirrored changes) and wait for
// (events, the day without a change) is capped. One mutable object, read where each bound is used
// (streamBytes when a card is read), so a test can lower a bound for a run and put it back;
// nothing else changes it.

const MiB = 1024 * 1024;

export const A2A_LIMITS = {
  /** Artifact parts one follower round keeps of a remote task: content bytes in total, artifacts,
   *  parts. Past them a part is dropped and the result says so (OVER_LIMIT). */
  keptBytes: 4 * MiB,
  keptArtifacts: 64,
  keptParts: 256,
  /** Bytes one event stream may deliver over its life; past them the round ends and the follower
   *  subscribes again after its backoff. */
  streamBytes: 64 * MiB,
  /** At most one mirrored change of a link per this long (the latest remote state wins). */
  coalesceMs: 1_000,
  /** Mirrored changes of a link in any hour; past them our task fails and following stops. */
  changesPerHour: 60,
  /** A round ends when no event came for this long (SSE comments are not events). */
  eventIdleMs: 5 * 60_000,
  /** Rounds: 1 s after a change, doubling to 60 s while nothing changes. */
  firstBackoffMs: 1_000,
  maxBackoffMs: 60_000,
  /** Following stops this long after the last change seen, inside a round too. */
  followForMs: 24 * 3600_000,
};

/** Ends the note of what a follower dropped. */
export const OVER_LIMIT = 'not kept: over the limit';

/** A duration for a note: in whole hours, minutes or else seconds. */
export const spanText = (ms: number): string => (ms % 3600_000 === 0 ? `${ms / 3600_000} h` : ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`);
