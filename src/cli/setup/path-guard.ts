// Where setup may write. A project is someone else's tree (a cloned repository can ship any of our
// paths, or a directory on the way, as a symlink to ~/.bashrc or ~/.ssh): beneath the project
// directory nothing is followed. The user's own home is theirs: linked config directories and
// edited files (dotfiles) are followed, but a whole file of ours is never written or replaced
// through a link, which would overwrite whatever the link names.
import { lstatSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import type { Scope } from './programs.js';
import { Refusal } from './refusal.js';

const isLink = (p: string): boolean => {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
};

const inside = (root: string, p: string): boolean => {
  const rel = relative(root, p);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
};

const refuse = (p: string, why: string): never => {
  throw new Refusal(`${p} is a symbolic link${why}; setup and unsetup do not write or delete through it: remove it, then run again`, p, 'symlink_refused');
};

/** Refuses (before anything is written) a path setup or unsetup would write or delete. */
export function guardPath(scope: Scope, path: string, whole: boolean): void {
  if (scope.kind === 'project' && inside(scope.dir, path)) {
    // The project directory itself may be a link: judge everything beneath its target. A project
    // gone (unsetup after it was deleted) holds nothing to follow, and nothing is written there.
    let root: string;
    try {
      root = realpathSync(scope.dir);
    } catch {
      return;
    }
    let at = root;
    let named = scope.dir;
    for (const part of relative(scope.dir, path).split(sep)) {
      at = join(at, part);
      named = join(named, part);
      if (isLink(at)) refuse(named, ' inside the project');
    }
    let real: string | null = null;
    try {
      real = realpathSync(at);
    } catch {
      /* not there yet: every existing part was checked above */
    }
    if (real !== null && !inside(root, real)) throw new Refusal(`${path} resolves to ${real}, outside the project ${scope.dir}`, path, 'outside_project');
    return;
  }
  if (whole && isLink(path)) refuse(path, '');
}
