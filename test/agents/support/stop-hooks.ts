// The hook processes (`m4a hook NAME`) of one world, found by the daemon's data directory in their
// environment, so other worlds on the machine do not count.
import { readdirSync, readFileSync } from 'node:fs';

export function hookProcesses(dataDir: string, name: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').includes(`hook ${name}`)) continue;
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`M4A_DATA_DIR=${dataDir}`)) out.push(Number(pid));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** Claude Code's Stop hooks (`m4a hook claude-stop`). */
export const stopHooks = (dataDir: string): number[] => hookProcesses(dataDir, 'claude-stop');
