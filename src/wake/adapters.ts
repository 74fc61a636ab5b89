// One registry of wake adapters per daemon: the step in a chain → a live adapter. Adapters that
// hold state are shared: one connection per Codex app-server, one pool (and cap) for all commands,
// one durable outbox for all webhooks, resumed at start so retries survive a restart, one A2A
// bridge for all a2a steps (its open links followed again at start).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { MailError } from '../wire/errors.js';
import type { WakeStep } from '../wire/wake.js';
import type { Clock } from '../engine/clock.js';
import type { Logger } from '../engine/log.js';
import type { MailEngine } from '../engine/mail-engine.js';
import type { Store } from '../store/types.js';
import { createHooksAdapter } from './hooks-adapter.js';
import { createCodexAdapter, type CodexAdapter } from './codex-app-server.js';
import { checkCommandStep, checkEnvNames, CommandAdapter, CommandPool } from './command-adapter.js';
import { WebhookAdapter } from './webhook-adapter.js';
import { WebhookOutbox } from './webhook-outbox.js';
import { ensureSigningKey, readSigningKey, WEBHOOK_KEY_FILE } from './webhook-signing.js';
import { checkWebhookStep } from './remote-url.js';
import { A2aAdapter } from './a2a-adapter.js';
import { A2aBridge } from './a2a-bridge.js';
import { checkA2aStep } from './a2a-remote.js';
import { checkOpencodeStep, createOpencodeAdapter } from './opencode-server.js';
import type { ListenerOwner, WakeAdapter } from './types.js';

export interface AdapterRegistryOptions {
  store: Store;
  /** For adapters that act as the account they deliver for (a2a: reads the mail it forwards and
   *  mirrors the remote agent's answers back as that account). */
  engine: MailEngine;
  clock: Clock;
  log: Logger;
  /** Whether a hook of the lineage has called this daemon (hooks can only wake such a session). */
  hookState(account: string, lineage: string): { hooked: boolean };
  dataDir: string;
  /** Command runs at once across every chain (default 4). */
  commandCap?: number;
  version?: string;
  /** Who listens on a loopback port: opencode and codex ws:// steps never talk to another user's. */
  listenerOwner: ListenerOwner;
}

export class AdapterRegistry {
  private cache = new Map<string, WakeAdapter>();
  private hooks: WakeAdapter;
  private pool: CommandPool;
  private outbox: WebhookOutbox | null = null;
  private a2a: A2aBridge;

  constructor(private o: AdapterRegistryOptions) {
    this.hooks = createHooksAdapter((account, lineage) => o.hookState(account, lineage));
    this.pool = new CommandPool({ maxConcurrent: o.commandCap ?? 4 });
    this.a2a = new A2aBridge({ engine: o.engine, clock: o.clock, log: o.log });
  }

  /** Resumes webhook deliveries a previous run left pending, and follows again the remote A2A
   *  tasks a previous run followed. */
  async start(): Promise<void> {
    if (existsSync(join(this.o.dataDir, WEBHOOK_KEY_FILE))) await this.webhookOutbox().start();
    await this.a2a.start();
  }

  /** Refuses a step that could never run (named errors), before a chain is stored. Returns the
   *  webhook signing key when this call created it: shown once, never again. */
  async check(steps: WakeStep[]): Promise<Record<string, string>> {
    for (const s of steps) {
      if (s.kind === 'command') checkCommandStep(s);
      if (s.kind === 'codex-app-server' && s.env !== undefined) {
        if (s.listen !== 'spawn')
          throw new MailError('malformed', 'env: only a spawned app-server (listen=spawn) is started with an environment', { field: 'env', reason: 'only for listen=spawn' });
        checkEnvNames(s.env);
      }
      if (s.kind === 'webhook') checkWebhookStep(s);
      if (s.kind === 'a2a') checkA2aStep(s);
      if (s.kind === 'opencode') checkOpencodeStep(s);
    }
    if (!steps.some((s) => s.kind === 'webhook')) return {};
    const { key, created } = ensureSigningKey(this.o.dataDir);
    return created ? { webhook_signing_key: key } : {};
  }

  adapterFor(step: WakeStep): WakeAdapter {
    if (step.kind === 'hooks') return this.hooks;
    const id = JSON.stringify(step);
    let a = this.cache.get(id);
    if (a) return a;
    switch (step.kind) {
      case 'codex-app-server':
        a = createCodexAdapter(step, {
          listenerOwner: this.o.listenerOwner,
          ...(this.o.version ? { clientVersion: this.o.version } : {}),
          log: (event, fields) => this.o.log.info({ ...fields, event }, 'codex adapter'),
        });
        break;
      case 'command':
        a = new CommandAdapter(step, { pool: this.pool });
        break;
      case 'webhook':
        a = new WebhookAdapter(step, { outbox: this.webhookOutbox(), clock: this.o.clock });
        break;
      case 'a2a':
        a = new A2aAdapter(step, this.a2a);
        break;
      case 'opencode':
        a = createOpencodeAdapter(step, { listenerOwner: this.o.listenerOwner });
        break;
    }
    this.cache.set(id, a);
    return a;
  }

  /** The outbox if something made it already (metrics look without making a signing key). */
  outboxIfMade(): WebhookOutbox | null {
    return this.outbox ?? null;
  }

  /** The daemon's one durable outbox of signed POSTs (webhook steps and A2A push notifications). */
  webhookOutbox(): WebhookOutbox {
    if (!this.outbox) {
      const key = existsSync(join(this.o.dataDir, WEBHOOK_KEY_FILE)) ? readSigningKey(this.o.dataDir) : ensureSigningKey(this.o.dataDir).key;
      this.outbox = new WebhookOutbox(this.o.store, this.o.clock, key, { log: this.o.log });
    }
    return this.outbox;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...[...this.cache.values()].map((a) => (a as CodexAdapter).close?.()), this.pool.close(), this.outbox?.close(), this.a2a.close()]);
  }
}
