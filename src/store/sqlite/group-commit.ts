// Group commit: calls made in the same event-loop turn are queued and run together in one
// transaction on the next setImmediate, so a burst of sends pays one commit instead of one each.
// Callers resume only once the batch is durable (the writer's barrier, writer.ts). While the
// writer holds commits (a checkpoint catching up, checkpointer.ts) the queue keeps growing.

interface Pending<In, Out> {
  input: In;
  resolve: (out: Out) => void;
  reject: (err: unknown) => void;
}

export class GroupCommit<In, Out> {
  private queue: Pending<In, Out>[] = [];
  private timer: NodeJS.Immediate | null = null;
  private waiting = false;

  /**
   * @param runBatch evaluates the inputs in order inside ONE transaction and returns one output
   *   each; if it throws, the transaction has rolled back and every caller in the batch rejects.
   * @param durable resolves once the committed batch is on disk (rejects: every caller rejects).
   * @param afterCommit runs once the batch is durable (outside the transaction), before its callers resume.
   * @param held while commits are held: resolves when they may go on
   */
  constructor(
    private readonly runBatch: (inputs: In[]) => Out[],
    private readonly durable: () => Promise<void>,
    private readonly afterCommit: (outputs: Out[]) => void,
    private readonly held: () => Promise<void> | null = () => null,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.timer ??= setImmediate(() => this.flush());
    });
  }

  /** Runs whatever is queued now (also used by close()). */
  flush(): void {
    if (this.timer) clearImmediate(this.timer);
    this.timer = null;
    if (this.queue.length === 0) return;
    const held = this.held();
    if (held) {
      if (!this.waiting) {
        this.waiting = true;
        void held.then(() => {
          this.waiting = false;
          this.flush();
        });
      }
      return;
    }
    const batch = this.queue;
    this.queue = [];
    let outputs: Out[];
    try {
      outputs = this.runBatch(batch.map((p) => p.input));
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    void this.durable().then(
      () => {
        this.afterCommit(outputs);
        batch.forEach((p, i) => p.resolve(outputs[i] as Out));
      },
      (err: unknown) => {
        for (const p of batch) p.reject(err);
      },
    );
  }
}
