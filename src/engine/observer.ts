// What the daemon counts, seen from inside: the engine, the store guard and the doors report
// through this narrow interface, so none of them knows the metrics library (the daemon implements
// it with prom-client, src/daemon/metrics.ts). Absent: nothing is measured, nothing is paid.
export interface Observer {
  /** One store call (store-guard.ts): its method, how long it took, and whether it failed. */
  storeCall(method: string, seconds: number, failed: boolean): void;
  /** One operation a door ran: `code` null when it answered, else the MailError code it refused with. */
  operation(door: string, operation: string, code: string | null): void;
}
