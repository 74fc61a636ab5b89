// Host identity for daemons sharing a store. A session id is SHA-256(host id, boot id, pid, start
// time) (src/attest/session-id.ts), and liveness is judged per host id, so the host id must differ
// between machines and stay put across restarts of the daemon. Today it is a random id kept in the
// data directory's `host-id` file; this derives it from the machine instead, for daemons to use
// when they write that file for the first time (see docs/scaling.md, "Host identity").
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** `m-` + 32 hex of a keyed hash of /etc/machine-id (the raw id is meant to stay private, see
 *  machine-id(5)), or null where the file is missing or empty. */
export function machineHostId(path = '/etc/machine-id'): string | null {
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
  if (raw === '') return null;
  return 'm-' + createHash('sha256').update(`mail4agent host id\0${raw}`).digest('hex').slice(0, 32);
}

/** This boot of this machine (Linux), or null. */
export function bootId(path = '/proc/sys/kernel/random/boot_id'): string | null {
  try {
    return readFileSync(path, 'latin1').trim() || null;
  } catch {
    return null;
  }
}
