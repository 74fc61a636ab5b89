// What every scenario gets: the sizes of this run, a shared daemon with accounts made on demand,
// the comparison servers (started once, on demand), and the load generator.
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { startDaemon, type Daemon } from './daemon.js';
import { runJson, spawnTs, stopChild, tempDir, onCleanup } from './procs.js';
import { startNats, startRedis, type ServerHandle } from '../baselines/servers.js';
import type { Sizes } from './sizes.js';
import { progress } from './progress.js';

export interface Row {
  scenario: string;
  system: string;
  metric: string;
  value: string;
}

export interface Target {
  id: string;
  text: string;
  measured: string;
  met: boolean | null;
}

export interface ScenarioResult {
  name: string;
  data: unknown;
  rows: Row[];
  targets: Target[];
  /** Commands a reader can repeat by hand (recorded in the JSON and the doc). */
  commands?: string[];
}

export class Ctx {
  readonly work = tempDir('run');
  readonly logFile = join(this.work, 'children.log');
  private mainDaemon: Daemon | null = null;
  private secrets = new Map<string, string>();
  private servers = new Map<string, Promise<ServerHandle>>();
  private echoPort: Promise<number> | null = null;

  constructor(
    readonly sizes: Sizes,
    readonly quick: boolean,
  ) {
    onCleanup(async () => {
      await this.mainDaemon?.stop();
      for (const s of this.servers.values()) await (await s.catch(() => null))?.stop();
    });
  }

  phase(label: string): void {
    progress.phase(label);
  }

  tick(done: number, total: number, unit: string): void {
    if (done % 25 === 0 || done === total) progress.update(done, total, unit);
  }

  /** A fresh data directory inside this run's temp dir. */
  dataDir(name: string): string {
    const d = join(this.work, name, 'data');
    mkdirSync(d, { recursive: true });
    return d;
  }

  async daemon(): Promise<Daemon> {
    this.mainDaemon ??= await startDaemon(this.dataDir('main'));
    return this.mainDaemon;
  }

  /** Secrets of accounts on the shared daemon, created the first time they are asked for. */
  async accounts(ids: string[], onDone?: (n: number) => void): Promise<string[]> {
    const d = await this.daemon();
    const missing = ids.filter((id) => !this.secrets.has(id));
    if (missing.length > 0) for (const [id, s] of await d.accounts(missing, 8, onDone)) this.secrets.set(id, s);
    return ids.map((id) => this.secrets.get(id) as string);
  }

  async secret(id: string): Promise<string> {
    return (await this.accounts([id]))[0] as string;
  }

  loadgen<T>(spec: unknown, label: string, timeoutMs?: number): Promise<T> {
    return runJson<T>('loadgen.ts', spec, { label, logFile: this.logFile, ...(timeoutMs ? { timeoutMs } : {}) });
  }

  baseline<T>(script: string, spec: unknown, label: string): Promise<T> {
    return runJson<T>(`baselines/${script}`, spec, { label, logFile: this.logFile });
  }

  server(name: 'redis-aof-always' | 'redis-default' | 'nats-jetstream'): Promise<ServerHandle> {
    let s = this.servers.get(name);
    if (!s) {
      s = name === 'nats-jetstream' ? startNats() : startRedis(name === 'redis-aof-always');
      this.servers.set(name, s);
    }
    return s;
  }

  /** The node:http JSON echo baseline, in its own process. */
  echo(): Promise<number> {
    this.echoPort ??= new Promise((resolve, reject) => {
      const child = spawnTs('baselines/echo-server.ts', ['0']);
      onCleanup(() => stopChild(child, 2000));
      let out = '';
      child.stdout?.on('data', (c: Buffer) => {
        out += c.toString('utf8');
        const line = out.split('\n')[0];
        if (out.includes('\n') && line) resolve((JSON.parse(line) as { port: number }).port);
      });
      child.once('exit', (code) => reject(new Error(`echo server exited with ${code}`)));
    });
    return this.echoPort;
  }

  async stopServers(): Promise<void> {
    for (const [name, s] of this.servers) {
      await (await s.catch(() => null))?.stop();
      this.servers.delete(name);
    }
  }
}
