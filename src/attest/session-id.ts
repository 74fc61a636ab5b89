import { createHash } from 'node:crypto';

/** A session id names one process incarnation on one boot of one host: a reused pid (different start
 *  time), a reboot (different boot id) or another host never yields the same id. */
export function deriveSessionId(hostId: string, bootId: string, pid: number, startTime: number): string {
  const h = createHash('sha256');
  h.update(`${hostId}\0${bootId}\0${pid}\0${startTime}`);
  return 's-' + h.digest('hex');
}
