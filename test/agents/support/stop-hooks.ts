// The Claude Code Stop hooks (`m4a hook claude-stop`) of one world, found by the daemon's data
// directory in their environment, so other worlds on the machine do not count.
import { readdirSync, readFileSync } from 'node:fs';

export function stopHooks(dataDir: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').includes('hook claude-stop')) continue;
      if (readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').includes(`M4A_DATA_DIR=${dataDir}`)) out.push(Number(name));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}
