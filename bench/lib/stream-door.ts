// Where a bench daemon's stream door listens: the `socket` field of daemon.json in its data dir,
// present only while the door is up (absent with `serve --no-stream`, or when the door could not
// start: then every stream figure of the run says "not run" with this reason).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export function streamSocket(dataDir: string): string | null {
  try {
    const info = JSON.parse(readFileSync(join(dataDir, 'daemon.json'), 'utf8')) as { socket?: unknown };
    return typeof info.socket === 'string' && info.socket.length > 0 ? info.socket : null;
  } catch {
    return null;
  }
}

export const NO_STREAM = 'not run: the daemon has no stream door (no `socket` in daemon.json)';
