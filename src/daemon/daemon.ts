// Starting and stopping one daemon: data directory, store, engine, doors, background sweeps.
import { join } from 'node:path';
import { existsSync, readFileSync, unlinkSync } from 'node:fs';
import { pino } from 'pino';
import { MailEngine } from '../engine/mail-engine.js';
import { AdminOps, OPERATOR_ACCOUNT } from '../engine/admin-ops.js';
import { systemClock, systemIds, type Clock, type Ids } from '../engine/clock.js';
import type { Logger } from '../engine/log.js';
import type { WaitCaps } from '../engine/waits.js';
import type { LoopGuardOptions } from '../engine/loop-guard.js';
import { HttpDoor } from '../doors/http/http-door.js';
import type { GateOptions, GateStats } from '../doors/http/connection-gate.js';
import { WebDoor } from '../doors/web/web-door.js';
import { WebLanListener, parseLanAddress } from '../doors/web/lan-listener.js';
import { argon2Hasher } from '../doors/web/argon2-hasher.js';
import { WebAuth, type WebAuthOptions } from '../engine/web-auth.js';
import { createAttestor, loadPeerCred } from '../attest/index.js';
import { StreamDoor } from '../doors/stream/stream-door.js';
import { socketPathProblem } from '../doors/stream/socket-file.js';
import type { Attestor, PeerCredentials } from '../attest/types.js';
import { openStore, type SqliteFsync } from '../store/index.js';
import type { Store } from '../store/types.js';
import { HttpDoorbell } from './doorbell.js';
import { acquireLock, ensureDataDir, FILES, loadHostId, writeSecretFile } from './data-dir.js';
import { PACKAGE_ROOT, VERSION } from './version.js';
import { resolveConfig, type DaemonConfig } from './config.js';
import { digestSecret } from '../engine/credentials.js';
import { MailError } from '../wire/errors.js';
import { WakeChains } from '../engine/wake-chains.js';
import { AdapterRegistry } from '../wake/adapters.js';
import { portOwner } from '../client/port-owner.js';
import { WakeDispatcher } from '../wake/dispatcher.js';
import { A2aPushSender } from '../doors/a2a/a2a-push-sender.js';
import { PushConfigs } from '../doors/a2a/a2a-push.js';
import { ConnectionBudget, descriptorBudget } from '../doors/connection-budget.js';
import { requestIdLogger } from '../engine/request-id.js';
import { DaemonMetrics } from './metrics.js';
import { EmailRelay, type EmailRelayOptions } from '../wake/email-relay.js';
import { relayTarget, relayName } from '../wake/relay-config.js';
import type { EmailOptions } from '../engine/email-book.js';
import { SmtpDoor } from '../doors/smtp/smtp-door.js';
import { smtpSettings } from './smtp-settings.js';
import type { SmtpLimits } from '../doors/smtp/smtp-limits.js';
import { RelayLink } from '../doors/relay-link/relay-link.js';
import type { ConnectorTimings } from '../doors/relay-link/relay-connector.js';
import { loadRelayLink, saveRelayLink } from './relay-link-config.js';

export interface DaemonOptions extends Partial<DaemonConfig> {
  /** The fsync of the SQLite store's durability barrier (tests observe it). */
  sqliteFsync?: SqliteFsync;
  clock?: Clock;
  ids?: Ids;
  log?: Logger;
  waitCaps?: WaitCaps;
  attestor?: Attestor;
  allowedUids?: number[];
  sweepMs?: number;
  sessionRetentionMs?: number;
  /** Started by a client on demand (`m4a serve --auto`); replaced after an upgrade once idle. */
  auto?: boolean;
  loopGuard?: LoopGuardOptions;
  /** Browser logins: session lifetimes and the login throttle (tests shorten them). */
  web?: Partial<WebAuthOptions>;
  /** Wake commands running at once, across every chain (default 4). */
  commandCap?: number;
  /** How often timers set through another daemon are looked for (default 30 s). */
  timerPollMs?: number;
  /** Called when the operator asks the daemon to stop (the caller decides how to exit). */
  onStopRequest?: (when: 'now' | 'idle') => void;
  /** Bounds on connections not yet past authentication, and the headers deadline (tests shorten them). */
  gate?: GateOptions;
  headersTimeoutMs?: number;
  /** The stream door (`<data-dir>/m4a.sock`); false: HTTP only (`serve --no-stream`). */
  stream?: boolean;
  /** false simulates a machine where the SO_PEERCRED addon cannot load (tests). */
  streamAddon?: boolean;
  /** The stream door's hello deadline and unauthenticated cap (tests lower them). */
  streamLimits?: ConstructorParameters<typeof StreamDoor>[0]['limits'];
  /** `GET /metrics` and the counting behind it; false: neither (`serve --no-metrics`). */
  metrics?: boolean;
  /** The relay worker's backoff and timeouts (tests shorten them). */
  emailRelay?: Partial<Omit<EmailRelayOptions, 'target' | 'domain' | 'hostId' | 'log'>>;
  /** The SMTP door's rates, connection bounds and timeouts (tests lower them). */
  smtpLimits?: Partial<SmtpLimits>;
  /** Mail from outside kept per account, attachment bytes per mail (tests lower them). */
  emailCaps?: Pick<EmailOptions, 'externalCap' | 'keepAttachmentBytes'>;
  /** The relay link's heartbeat and backoff (tests shorten them). */
  relayLink?: Partial<ConnectorTimings>;
}

export interface RunningDaemon {
  /** No request in flight and no wait parked. */
  idle(): boolean;
  port: number;
  url: string;
  dataDir: string;
  engine: MailEngine;
  store: Store;
  hostId: string;
  operatorToken: string;
  /** The browser mailbox on the LAN (`--web-lan`), if asked for. */
  webLanUrl: string | null;
  /** Where the SMTP door listens (`smtp://127.0.0.1:2525`), or null without `--smtp`. */
  smtpUrl: string | null;
  /** The stream door's socket, or null when it is off (daemon.json then has no `socket`). */
  socketPath: string | null;
  /** The stream door, when it is on (for tests and metrics). */
  streamDoor: StreamDoor | null;
  wake: WakeDispatcher;
  chains: WakeChains;
  /** The outbound relay link (`m4a connect`). */
  relayLink: RelayLink;
  /** What the door's bound on unproven connections sees (for tests and metrics). */
  connections(): GateStats;
  close(): Promise<void>;
}

export async function startDaemon(o: DaemonOptions = {}): Promise<RunningDaemon> {
  const cfg = resolveConfig(o);
  // Lines logged while a request is served carry its req_id (engine/request-id.ts).
  const log: Logger = requestIdLogger(o.log ?? pino({ level: process.env.M4A_LOG_LEVEL ?? 'info' }, pino.destination(2)));
  const metrics = o.metrics === false ? null : new DaemonMetrics();
  // Refused before anything is touched: a relay URL, its credentials file and the domain it needs.
  const relay = cfg.smtpRelay ? relayTarget(cfg.smtpRelay, cfg.smtpRelayCredentials) : null;
  if (relay && !cfg.mailDomain) throw new Error('email_unavailable: --smtp-relay needs --mail-domain DOMAIN (mail leaves as <account>@<domain>)');
  if (cfg.smtpRelayCredentials && !relay) throw new Error('smtp_relay_invalid: --smtp-relay-credentials without --smtp-relay URL');
  if (cfg.emailPerHour !== undefined && !(Number.isInteger(cfg.emailPerHour) && cfg.emailPerHour >= 1 && cfg.emailPerHour <= 100_000))
    throw new Error(`malformed: --email-per-hour is a whole number from 1 to 100000, not ${cfg.emailPerHour}`);
  const smtpAt = smtpSettings(cfg); // --smtp, --smtp-lan, --mail-alias, --smtp-max-bytes checked
  const email: EmailOptions | undefined = cfg.mailDomain
    ? {
        domain: cfg.mailDomain,
        outbound: relay !== null,
        ...(cfg.emailPerHour !== undefined ? { sendPerHour: cfg.emailPerHour } : {}),
        ...(cfg.mailAliases ? { aliases: cfg.mailAliases } : {}),
        ...o.emailCaps,
      }
    : undefined;
  const tightened = ensureDataDir(cfg.dataDir);
  if (tightened.length) log.warn({ dataDir: cfg.dataDir, tightened }, 'the data directory was readable by other users: tightened to 0700, its files to 0600');
  const releaseLock = acquireLock(cfg.dataDir);
  let store: Store | undefined;
  let started: Attestor | undefined; // its worker thread must end when the start fails
  let startedRelay: EmailRelay | null = null;
  let smtp: SmtpDoor | null = null;
  try {
    const hostId = loadHostId(cfg.dataDir);
    store = await openStore(cfg.store, { hostId, ...(o.sqliteFsync ? { sqliteFsync: o.sqliteFsync } : {}) });
    const attestor = (started = o.attestor ?? createAttestor({ hostId, packageRoot: PACKAGE_ROOT, allowedUids: o.allowedUids ?? [] }));
    const engine = new MailEngine({
      store,
      clock: o.clock ?? systemClock,
      ids: o.ids ?? systemIds,
      hostId,
      isAlive: (pid, st) => attestor.isAlive(pid, st),
      doorbell: new HttpDoorbell(log),
      log,
      ...(o.waitCaps ? { waitCaps: o.waitCaps } : {}),
      ...(o.sessionRetentionMs ? { sessionRetentionMs: o.sessionRetentionMs } : {}),
      ...(o.loopGuard ? { loopGuard: o.loopGuard } : {}),
      ...(o.timerPollMs ? { timerPollMs: o.timerPollMs } : {}),
      ...(metrics ? { observer: metrics } : {}),
      ...(email ? { email } : {}),
    });
    // Wake chains: subscribed before the engine starts, so reminders due at start wake too.
    const adapters = new AdapterRegistry({
      store: engine.store,
      engine,
      clock: engine.clock,
      log,
      hookState: (a, l) => engine.hookState(a, l),
      dataDir: cfg.dataDir,
      version: VERSION,
      listenerOwner: portOwner,
      ...(o.commandCap ? { commandCap: o.commandCap } : {}),
    });
    const chains = new WakeChains(
      engine.store,
      engine.clock,
      (s) => engine.isLive(s),
      (steps) => adapters.check(steps),
    );
    const wake = new WakeDispatcher({ engine, chains, adapterFor: (step) => adapters.adapterFor(step), hostId });
    wake.start();
    const unwatch = metrics?.attach({ engine, store, wake, outbox: () => adapters.outboxIfMade() });
    await adapters.start();
    // A2A push notifications: signed POSTs through the same outbox as webhook steps.
    const a2aPush = new A2aPushSender({ engine, post: (e) => adapters.webhookOutbox().enqueue(e) });
    const ownPorts: number[] = [];
    const a2aConfigs = new PushConfigs({ store: engine.store, hostId, now: () => engine.clock.now(), watch: a2aPush, ownPorts: () => ownPorts });
    await a2aPush.start();
    await engine.start();
    // Mail to e-mail addresses: the relay worker resumes what an earlier run left queued.
    const emailRelay = (startedRelay = relay && email ? new EmailRelay(engine.store, engine.clock, { ...o.emailRelay, target: relay, domain: email.domain, hostId, log }) : null);
    if (emailRelay && relay && email) log.info({ relay: relayName(relay), resumed: await emailRelay.start(), domain: email.domain }, 'e-mail relay ready');
    let smtpUrl: string | null = null;
    if (smtpAt && email) {
      smtp = new SmtpDoor({ email: engine.email, domain: email.domain, log, limits: { ...o.smtpLimits, ...(cfg.smtpMaxBytes ? { maxBytes: cfg.smtpMaxBytes } : {}) } });
      const smtpPort = await smtp.listen(smtpAt.host, smtpAt.port).catch((err: unknown) => {
        throw new Error(`--smtp ${cfg.smtp}: ${err instanceof Error ? err.message : String(err)}`);
      });
      smtpUrl = `smtp://${smtpAt.host.includes(':') ? `[${smtpAt.host}]` : smtpAt.host}:${smtpPort}`;
      log.info({ url: smtpUrl, domain: email.domain, max_bytes: smtp.limits.maxBytes }, 'receiving e-mail');
    }
    const webAuth = new WebAuth(engine.store, engine.clock, argon2Hasher, o.web);
    const admin = new AdminOps(engine, webAuth);
    const web = new WebDoor({ engine, admin, auth: webAuth, log, chains, ...(metrics ? { observer: metrics } : {}) });
    const operatorToken = await ensureOperator(engine, admin, cfg.dataDir, hostId);
    const relayLink = new RelayLink({
      ctx: { engine, admin, chains, ...(metrics ? { observer: metrics } : {}) },
      log,
      version: VERSION,
      settings: savedRelayLink(cfg.dataDir, log),
      save: (st) => saveRelayLink(cfg.dataDir, st),
      ...(o.relayLink ? { timings: o.relayLink } : {}),
    });
    const budget = new ConnectionBudget(descriptorBudget());
    const door = new HttpDoor({
      engine,
      admin,
      web,
      a2aPush: a2aConfigs,
      wake: chains,
      attestor,
      log,
      version: VERSION,
      ...(o.onStopRequest ? { onStopRequest: o.onStopRequest } : {}),
      ...(o.gate ? { gate: o.gate } : {}),
      ...(o.headersTimeoutMs ? { headersTimeoutMs: o.headersTimeoutMs } : {}),
      budget,
      ...(metrics ? { observer: metrics, metrics: () => metrics.exposition() } : {}),
      relayLink,
    });
    const port = await door.listen(cfg.host, cfg.port);
    ownPorts.push(port);
    const lan = cfg.webLan ? new WebLanListener(web, log, door.gate, { budget, ...(o.headersTimeoutMs ? { headersTimeoutMs: o.headersTimeoutMs } : {}) }) : null;
    let webLanUrl: string | null = null;
    if (lan && cfg.webLan) {
      const at = parseLanAddress(cfg.webLan);
      const lanPort = await lan.listen(at.host, at.port);
      ownPorts.push(lanPort);
      webLanUrl = `http://${at.host.includes(':') ? `[${at.host}]` : at.host}:${lanPort}`;
      log.warn({ url: webLanUrl }, 'the browser mailbox is also served on the LAN over plain HTTP: trusted networks only');
    }
    const url = `http://${cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host}:${port}`;
    const streamDoor =
      o.stream === false
        ? null
        : await openStreamDoor(
            join(cfg.dataDir, FILES.socket),
            o.streamAddon === false || !attestor.attestPeer,
            log,
            (peercred) =>
              new StreamDoor({
                engine,
                admin,
                wake: chains,
                attestor,
                log,
                version: VERSION,
                onStopRequest: o.onStopRequest,
                peercred,
                budget,
                limits: o.streamLimits,
                observer: metrics ?? undefined,
                relayLink,
              }),
          );
    const socketPath = streamDoor ? join(cfg.dataDir, FILES.socket) : null;
    const infoPath = join(cfg.dataDir, FILES.daemonInfo);
    const info = {
      pid: process.pid,
      url,
      port,
      host: cfg.host,
      ...(socketPath ? { socket: socketPath } : {}),
      version: VERSION,
      auto: !!o.auto,
      started_at: new Date().toISOString(),
    };
    writeSecretFile(infoPath, JSON.stringify(info) + '\n');

    const sweep = setInterval(() => void engine.sweepSessions().catch((err: unknown) => log.warn({ err: String(err) }, 'session sweep failed')), o.sweepMs ?? 30_000);
    sweep.unref();
    log.info({ url, dataDir: cfg.dataDir, store: store.kind, attestation: attestor.supported, version: VERSION }, 'mail4agent listening');
    relayLink.boot();

    let closing: Promise<void> | null = null;
    const s = store;
    return {
      idle: () => door.busy === 0 && (streamDoor?.busy ?? 0) === 0 && engine.parkedWaits() === 0,
      port,
      url,
      dataDir: cfg.dataDir,
      engine,
      store: s,
      hostId,
      operatorToken,
      webLanUrl,
      smtpUrl,
      socketPath,
      streamDoor,
      wake,
      chains,
      relayLink,
      connections: () => door.gate.stats(),
      close: () =>
        (closing ??= (async () => {
          clearInterval(sweep);
          await smtp?.close(); // first: a mail in DATA still reaches a running engine
          unwatch?.();
          relayLink.close();
          await wake.close();
          await emailRelay?.close();
          await a2aPush.close();
          await adapters.close();
          await engine.close(); // parked waits answer first, so in-flight requests can finish
          await Promise.all([door.close(), streamDoor?.close()]);
          await attestor.close?.();
          await lan?.close();
          await s.close();
          try {
            if ((JSON.parse(readFileSync(infoPath, 'utf8')) as { pid?: unknown }).pid === process.pid) unlinkSync(infoPath);
          } catch {
            /* gone */
          }
          releaseLock();
          log.info({}, 'mail4agent stopped');
        })()),
    };
  } catch (err) {
    await smtp?.close().catch(() => undefined);
    await startedRelay?.close().catch(() => undefined);
    await started?.close?.().catch(() => undefined);
    await store?.close().catch(() => undefined);
    releaseLock();
    throw err;
  }
}

/** The relay link's saved settings; a damaged file is logged and the daemon runs without a link. */
function savedRelayLink(dataDir: string, log: Logger): ReturnType<typeof loadRelayLink> {
  try {
    return loadRelayLink(dataDir);
  } catch (err) {
    // Only the kind of failure: a JSON parser's message may quote the file, token and all.
    log.error(
      { err: err instanceof SyntaxError ? 'not JSON' : err instanceof Error ? err.name : 'unreadable' },
      'relay-link.json is unreadable: the relay link is off until m4a connect configure',
    );
    return null;
  }
}

/** The stream door at `path`, or null with one warning line: the addon cannot load, the path is too
 *  long for a Unix socket, or the socket cannot be made (`noAddon`: not loaded, or the attestor
 *  cannot attest Unix socket peers). The daemon then serves HTTP only. */
async function openStreamDoor(path: string, noAddon: boolean, log: Logger, make: (peercred: (fd: number) => PeerCredentials) => StreamDoor): Promise<StreamDoor | null> {
  const off = (why: string): null => {
    log.warn({ why }, 'the stream door is off: clients use HTTP');
    return null;
  };
  const tooLong = socketPathProblem(path);
  if (tooLong) return off(tooLong);
  let unavailable = 'unavailable';
  const peercred = loadPeerCred(PACKAGE_ROOT, { disabled: noAddon, onUnavailable: (why) => (unavailable = why) });
  if (!peercred) return off(unavailable);
  const door = make(peercred);
  try {
    await door.listen(path);
    return door;
  } catch (err) {
    await door.close().catch(() => undefined);
    return off(err instanceof Error ? err.message : String(err));
  }
}

/** The operator credential exists from the first start on, in a 0600 file only the OS user reads.
 *  Several daemons may share one store (PostgreSQL): each data directory keeps its own operator
 *  account, so starting one never rotates another's secret. */
async function ensureOperator(engine: MailEngine, admin: AdminOps, dataDir: string, hostId: string): Promise<string> {
  const path = join(dataDir, FILES.operatorToken);
  if (existsSync(path)) {
    const token = readFileSync(path, 'utf8').trim();
    const acc = token ? await engine.store.findAccountByDigest(digestSecret(token)) : null;
    if (acc?.permissions.operator) return token;
  }
  const create = (id: string) => admin.createAccount({ id, kind: 'service', label: 'operator', permissions: { send: true, read: true, urgent: true, operator: true } });
  const own = `${OPERATOR_ACCOUNT}-${hostId.slice(0, 12)}`;
  let secret: string;
  if (!(await engine.store.getAccount(OPERATOR_ACCOUNT))) {
    // Two daemons starting together on a fresh shared store race for the name; the loser takes its own.
    try {
      secret = (await create(OPERATOR_ACCOUNT)).secret;
    } catch (err) {
      if (!(err instanceof MailError && err.code === 'already_exists')) throw err;
      secret = (await create(own)).secret;
    }
  } else {
    secret = (await engine.store.getAccount(own)) ? (await admin.rotate(own)).secret : (await create(own)).secret;
  }
  writeSecretFile(path, `${secret}\n`);
  return secret;
}
