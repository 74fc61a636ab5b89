// What each session has already been told about, for the hooks that wake agents: only mail new
// since the last notice counts, so read-but-unacknowledged mail never becomes a standing nag.
// Kept in memory and, when it changes, in the store (the engine saves noticed and listening), so a
// daemon restart neither re-tells old mail nor drops listen mode.

export interface NoticeState {
  /** Highest seq the session has been told about. */
  noticed: number;
  /** Stop hooks blocked in a row (Claude Code ends the turn after 8; we stop at MAX_BLOCKS). */
  blocks: number;
  lastToolNotice: number;
  listening: boolean;
}

/** One fewer than Claude Code's own cap of 8, so our guard always decides first. */
export const MAX_CONSECUTIVE_BLOCKS = 7;
/** PostToolUse fires after every tool call; tell about mail at most this often. */
export const TOOL_NOTICE_EVERY_MS = 60_000;

export class NoticeBook {
  private states = new Map<string, NoticeState>();

  /** A hook of this lineage has called the daemon (since it started). */
  known(key: string): boolean {
    return this.states.has(key);
  }

  /** Forgets every lineage whose key starts with `prefix` (an account removed: `s:<account>/`). */
  forget(prefix: string): void {
    for (const key of this.states.keys()) if (key.startsWith(prefix)) this.states.delete(key);
  }

  get(key: string): NoticeState {
    let s = this.states.get(key);
    if (!s) this.states.set(key, (s = { noticed: 0, blocks: 0, lastToolNotice: 0, listening: false }));
    return s;
  }
}
