// The package's programmatic entry: start a daemon in-process, or talk to one.
export { startDaemon, type DaemonOptions, type RunningDaemon } from './daemon/daemon.js';
export { MailClient, DaemonUnreachable } from './client/http-client.js';
export * from './wire/index.js';
