// Entry point of the attest layer: the Linux attestor on Linux, an honest "unsupported" elsewhere.
import { createLinuxAttestor, type LinuxAttestorOptions } from './linux.js';
import type { Attestor } from './types.js';

export { createLinuxAttestor, type AttestorStats, type LinuxAttestor, type LinuxAttestorOptions } from './linux.js';
export { deriveSessionId } from './session-id.js';
export { loadPeerCred, type PeerCredLoad, type ReadPeerCred } from './peercred.js';
export type * from './types.js';

export type AttestorOptions = LinuxAttestorOptions;

export function createAttestor(opts: AttestorOptions): Attestor {
  if (process.platform === 'linux') return createLinuxAttestor(opts);
  return {
    supported: false,
    attest: () => Promise.resolve({ ok: false, reason: 'unsupported_platform' }),
    isAlive: () => false,
  };
}
