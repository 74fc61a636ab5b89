// Writing a plan: a backup before the first change to a pre-existing file, writes that keep the
// file's mode (and go through a symlink to its target), then removal of emptied directories.
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname } from 'node:path';
import type { Change } from './plan.js';
import { readText } from './plan.js';
import { Refusal } from './refusal.js';
import type { FileAction } from './result.js';

export interface Written {
  path: string;
  action: FileAction;
}

export const backupPath = (path: string): string => `${path}.m4a-backup`;

function writeKeeping(path: string, text: string): void {
  const target = existsSync(path) && lstatSync(path).isSymbolicLink() ? realpathSync(path) : path;
  const mode = existsSync(target) ? statSync(target).mode & 0o7777 : null;
  const tmp = `${target}.m4a-${process.pid}.tmp`;
  writeFileSync(tmp, text, mode === null ? {} : { mode });
  if (mode !== null) chmodSync(tmp, mode);
  renameSync(tmp, target);
}

/** Another program may rewrite its config while we run (Claude Code rewrites ~/.claude.json). */
function unchangedSincePlan(changes: Change[]): void {
  for (const c of changes) if (c.after !== c.before && readText(c.path) !== c.before) throw new Refusal(`${c.path} changed while m4a ran; run the command again`, c.path);
}

/** After a file is undone: drop our backup once the file is back to exactly what it held. */
function dropBackup(c: Change, backup: boolean, out: Written[]): void {
  const b = backupPath(c.path);
  if (backup && c.after !== null && existsSync(b) && readFileSync(b, 'utf8') === c.after) {
    rmSync(b);
    out.push({ path: b, action: 'removed' });
  }
}

/** Directories setup created, innermost first, removed when empty. */
function dropDirs(dirs: string[]): void {
  for (const d of [...new Set(dirs)].sort((a, b) => b.length - a.length)) {
    try {
      if (readdirSync(d).length === 0) rmdirSync(d);
    } catch {
      /* gone already, or not ours to judge */
    }
  }
}

export function applySetup(changes: Change[]): Written[] {
  unchangedSincePlan(changes);
  const out: Written[] = [];
  for (const c of changes) {
    if (c.after !== c.before && c.after === null) rmSync(c.path, { force: true });
    else if (c.after !== c.before && c.after !== null) {
      // A file being undone (c.retired) gets no backup: it is going back to what it held; nor one
      // setup created (another account rewrites it): unsetup removes it, and a backup would stay.
      if (c.before !== null && !c.retired && c.record?.existed !== false && !existsSync(backupPath(c.path))) {
        copyFileSync(c.path, backupPath(c.path));
        if (c.record) c.record.backup = true;
        out.push({ path: backupPath(c.path), action: 'created' });
      }
      mkdirSync(dirname(c.path), { recursive: true });
      writeKeeping(c.path, c.after);
    }
    out.push({ path: c.path, action: c.action });
    if (c.retired) dropBackup(c, c.retired.backup, out);
  }
  dropDirs(changes.flatMap((c) => c.retired?.dirs ?? []));
  return out;
}

export function applyUnsetup(changes: Change[]): Written[] {
  unchangedSincePlan(changes);
  const out: Written[] = [];
  for (const c of changes) {
    if (c.after !== c.before) {
      if (c.after === null) rmSync(c.path, { force: true });
      else writeKeeping(c.path, c.after);
    }
    out.push({ path: c.path, action: c.action });
    dropBackup(c, !!c.record?.backup, out);
  }
  dropDirs(changes.flatMap((c) => c.record?.dirs ?? []));
  return out;
}
