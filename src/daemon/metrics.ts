// The daemon's metrics: one prom-client registry per daemon (never the library's global one, so
// several daemons in one process keep theirs apart). The engine, store guard and doors report
// through the Observer interface; the rest is read at scrape time from counters the parts keep
// (the wake dispatcher's attempts, parked waits, the stores' commit counts, the commit feed).
// The process metrics (prom-client's defaults) live in one registry per process, merged in at scrape.
// Every metric is listed in docs/operations.md ("Metrics and health"); a test holds them equal.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { MailEngine } from '../engine/mail-engine.js';
import type { Observer } from '../engine/observer.js';
import type { Store } from '../store/types.js';
import type { WakeDispatcher } from '../wake/dispatcher.js';

/** Operations that send mail: counted again as sends. */
const SEND_OPS = new Set(['send', 'reply']);

export interface MetricsSources {
  engine: MailEngine;
  /** The store as opened (its own stats(), if it keeps any). */
  store: Store;
  wake: WakeDispatcher;
  /** The webhook outbox, once it exists (it is made on first use). */
  outbox: () => { pending: number; attempts: { running: number; waiting: number } } | null;
}

type Stats = Record<string, number>;

/** The process's own metrics (CPU, memory, event loop, GC), made once per process: they describe
 *  the process, not a daemon, and their monitors (an event-loop timer, a GC observer) cannot be
 *  stopped, so a test process starting many daemons must not gain one set per daemon. */
let processMetrics: Registry | null = null;
function processRegistry(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics });
  }
  return processMetrics;
}

export class DaemonMetrics implements Observer {
  readonly registry = new Registry();
  private sources: MetricsSources | null = null;
  private batch = 0;
  private readonly operations: Counter<'door' | 'operation'>;
  private readonly refusals: Counter<'door' | 'operation' | 'code'>;
  private readonly sends: Counter<'door'>;
  private readonly storeSeconds: Histogram<'method'>;
  private readonly storeFailures: Counter<'method'>;
  private readonly batchSize: Histogram;

  constructor() {
    const registers = [this.registry];
    processRegistry();
    this.operations = new Counter({ name: 'm4a_operations_total', help: 'Operations answered, by door and operation.', labelNames: ['door', 'operation'], registers });
    this.refusals = new Counter({
      name: 'm4a_refusals_total',
      help: 'Operations refused, by door, operation and error code.',
      labelNames: ['door', 'operation', 'code'],
      registers,
    });
    this.sends = new Counter({ name: 'm4a_sends_total', help: 'Sends and replies answered (mail stored), by door.', labelNames: ['door'], registers });
    this.storeSeconds = new Histogram({
      name: 'm4a_store_call_duration_seconds',
      help: 'Store calls by method, as the engine sees them (queueing and group commit included).',
      labelNames: ['method'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.storeFailures = new Counter({ name: 'm4a_store_call_failures_total', help: 'Store calls that failed (store_unavailable), by method.', labelNames: ['method'], registers });
    this.batchSize = new Histogram({
      name: 'm4a_commit_batch_messages',
      help: 'Messages announced by one commit (a SQLite group commit, a PostgreSQL append batch or catch-up).',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
      registers,
    });
    const src = () => this.sources;
    const stats = (): Stats | null => {
      const s = src()?.store as unknown as { stats?: () => Stats } | undefined;
      return typeof s?.stats === 'function' ? s.stats() : null;
    };
    const fromStats = (name: string, help: string, key: string) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          const v = stats()?.[key];
          this.reset();
          if (typeof v === 'number') this.inc(v);
        },
      });
    fromStats('m4a_store_commits_total', 'Write transactions committed (SQLite; an append batch counts once).', 'commits');
    fromStats('m4a_store_append_batches_total', 'Append batches committed (SQLite group commits, PostgreSQL append batches).', 'appendBatches');
    fromStats('m4a_store_appends_total', 'Messages appended through those batches.', 'appends');
    new Gauge({
      name: 'm4a_waits_parked',
      help: 'Inbox reads parked on this daemon now.',
      registers,
      collect() {
        this.set(src()?.engine.parkedWaits() ?? 0);
      },
    });
    new Gauge({
      name: 'm4a_sessions_live',
      help: 'Sessions whose process is alive now.',
      registers,
      async collect() {
        const s = src();
        if (!s) return this.set(0);
        // A store that fails this read must not fail the scrape (an outage is when the feed's and
        // the failures' counters are read): the gauge keeps its last value, and the failure is
        // counted in m4a_store_call_failures_total by the store guard.
        try {
          this.set((await s.engine.store.listSessions()).filter((r) => s.engine.isLive(r)).length);
        } catch {
          /* kept */
        }
      },
    });
    new Counter({
      name: 'm4a_wake_attempts_total',
      help: 'Wake attempts by adapter and outcome (ok, failed).',
      labelNames: ['adapter', 'outcome'],
      registers,
      collect() {
        this.reset();
        for (const [k, n] of src()?.wake.attemptCounts ?? []) {
          const [adapter = '', outcome = ''] = k.split('|');
          this.inc({ adapter, outcome }, n);
        }
      },
    });
    new Gauge({
      name: 'm4a_webhook_outbox_events',
      help: 'Webhook and A2A push events scheduled or in flight in this process.',
      registers,
      collect() {
        this.set(src()?.outbox()?.pending ?? 0);
      },
    });
    new Gauge({
      name: 'm4a_webhook_outbox_attempts',
      help: 'Webhook POSTs holding a slot (running) or waiting for one.',
      labelNames: ['state'],
      registers,
      collect() {
        const a = src()?.outbox()?.attempts ?? { running: 0, waiting: 0 };
        this.set({ state: 'running' }, a.running);
        this.set({ state: 'waiting' }, a.waiting);
      },
    });
    this.registerPostgres(registers, stats);
  }

  /** The PostgreSQL commit feed (other daemons' commits): 0 on other stores. */
  private registerPostgres(registers: Registry[], stats: () => Stats | null): void {
    const pg = (): Stats | null => {
      const s = stats();
      return s && 'notifications' in s ? s : null;
    };
    const counter = (name: string, help: string, key: string) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          const v = pg()?.[key];
          if (typeof v === 'number') this.inc(v);
        },
      });
    counter('m4a_pg_feed_notifications_total', 'NOTIFY payloads received on the commit channel.', 'notifications');
    counter('m4a_pg_feed_catch_ups_total', 'Catch-up queries run (after a notification ahead of us, a (re)LISTEN or the poll).', 'catchUps');
    counter('m4a_pg_feed_keyed_announces_total', "Notifications whose keys announced other daemons' commits without a query.", 'keyedAnnounces');
    counter('m4a_pg_feed_listens_total', 'LISTENs (the first and every one after a reconnect).', 'listens');
    const lag = (name: string, help: string, key: string) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const v = pg()?.[key];
          this.set(typeof v === 'number' ? v / 1000 : 0);
        },
      });
    lag('m4a_pg_feed_lag_seconds', 'Feed lag of the last catch-up: from its first cause to the announcement of the commits it found.', 'lastCatchUpLagMs');
    lag('m4a_pg_feed_lag_max_seconds', 'The largest feed lag since start.', 'maxCatchUpLagMs');
  }

  /** Called once the parts exist. Commits announced in one synchronous turn are one batch. */
  attach(s: MetricsSources): () => void {
    this.sources = s;
    return s.store.onCommit(() => {
      if (this.batch++ === 0)
        queueMicrotask(() => {
          this.batchSize.observe(this.batch);
          this.batch = 0;
        });
    });
  }

  storeCall(method: string, seconds: number, failed: boolean): void {
    this.storeSeconds.observe({ method }, seconds);
    if (failed) this.storeFailures.inc({ method });
  }

  operation(door: string, operation: string, code: string | null): void {
    if (code !== null) return this.refusals.inc({ door, operation, code });
    this.operations.inc({ door, operation });
    if (SEND_OPS.has(operation)) this.sends.inc({ door });
  }

  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await Registry.merge([this.registry, processRegistry()]).metrics() };
  }
}
