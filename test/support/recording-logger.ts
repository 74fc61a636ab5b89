// A Logger that keeps every line, for tests that assert what the daemon logged (and at what level).
import type { Logger } from '../../src/engine/log.js';

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: object;
  msg: string | undefined;
}

export function recordingLogger(lines: LogLine[]): Logger {
  const at = (level: LogLine['level']) => (obj: object, msg?: string) => void lines.push({ level, obj, msg });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
