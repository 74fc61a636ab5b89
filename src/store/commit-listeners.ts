// Commit listeners, shared by every store: a wake-up is a hint, so a failing listener must not
// undo, block or break the commit that announced it.
import type { CommitEvent } from './types.js';

export class CommitListeners {
  private readonly set = new Set<(e: CommitEvent) => void>();

  add(listener: (e: CommitEvent) => void): () => void {
    this.set.add(listener);
    return () => this.set.delete(listener);
  }

  emit(e: CommitEvent): void {
    for (const l of [...this.set]) {
      try {
        l(e);
      } catch {
        /* see above */
      }
    }
  }
}
