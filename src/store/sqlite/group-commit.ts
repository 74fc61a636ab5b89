// Group commit: calls made in the same event-loop turn are queued and run together in one
// transaction on the next setImmediate, so a burst of sends pays one fsync instead of one each.

interface Pending<In, Out> {
  input: In;
  resolve: (out: Out) => void;
  reject: (err: unknown) => void;
}

export class GroupCommit<In, Out> {
  private queue: Pending<In, Out>[] = [];
  private timer: NodeJS.Immediate | null = null;

  /**
   * @param runBatch evaluates the inputs in order inside ONE transaction and returns one output
   *   each; if it throws, the transaction has rolled back and every caller in the batch rejects.
   * @param afterCommit runs once the batch is durable (outside the transaction).
   */
  constructor(
    private readonly runBatch: (inputs: In[]) => Out[],
    private readonly afterCommit: (outputs: Out[]) => void,
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
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    let outputs: Out[];
    try {
      outputs = this.runBatch(batch.map((p) => p.input));
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    batch.forEach((p, i) => p.resolve(outputs[i] as Out));
    this.afterCommit(outputs);
  }
}
