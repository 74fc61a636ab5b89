// ~/.config/mail4agent/setup-state.json: per program and scope, each file setup touched, whether
// it existed, and exactly what was added (in the order it was added), so unsetup removes that and
// nothing else. Mode 0600: a value replaced with --force is kept here to be put back.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { configDir } from '../credentials.js';
import type { JsonObject, Program, Scope, Transport } from './programs.js';
import { Refusal } from './refusal.js';

export type Edit =
  /** lead + body + trail was inserted (body is our value); `created` parents were added with it.
   *  `shared`: a member the file needs but whose name is not ours (an `ensure` target): removed
   *  only while it holds our value (another value is whoever set it since). */
  | { kind: 'json-entry'; keys: string[]; value: unknown; lead: string; body: string; trail: string; created: number; replaced?: string; shared?: true }
  | { kind: 'json-item'; keys: string[]; item: string; lead: string; trail: string; created: number }
  /** lead + body + trail appended `value` to the array at `keys`; ours is the item holding `marker`. */
  | { kind: 'json-append'; keys: string[]; value: JsonObject; marker: string; lead: string; body: string; trail: string; created: number }
  | { kind: 'block'; syntax: 'toml' | 'markdown'; prefix: string; body: string }
  | { kind: 'whole'; content: string; replaced?: string };

export interface FileRecord {
  path: string;
  existed: boolean;
  /** Directories setup created for the file, outermost first. */
  dirs: string[];
  /** Whether setup made <path>.m4a-backup. */
  backup: boolean;
  /** What was added, oldest first (unsetup undoes them newest first). */
  edits: Edit[];
}

export interface SetupRecord {
  program: Program;
  scope: 'user' | 'project';
  project_dir: string | null;
  account: string;
  transport: Transport;
  updated_at: string;
  files: FileRecord[];
}

export interface SetupState {
  version: 1;
  setups: Record<string, SetupRecord>;
}

export const statePath = (env: NodeJS.ProcessEnv = process.env): string => join(configDir(env), 'setup-state.json');
export const stateKey = (program: Program, scope: Scope): string => (scope.kind === 'user' ? `${program} user` : `${program} project ${scope.dir}`);

export function readState(env: NodeJS.ProcessEnv = process.env): SetupState {
  const p = statePath(env);
  if (!existsSync(p)) return { version: 1, setups: {} };
  try {
    const s = JSON.parse(readFileSync(p, 'utf8')) as SetupState;
    if (typeof s.setups !== 'object' || s.setups === null) throw new Error('no "setups" object');
    // Records written before a file could hold several edits have a single `edit`.
    for (const r of Object.values(s.setups))
      for (const f of r.files as (FileRecord & { edit?: Edit })[]) {
        if (!Array.isArray(f.edits)) f.edits = f.edit ? [f.edit] : [];
        delete f.edit;
      }
    return { version: 1, setups: s.setups };
  } catch (err) {
    throw new Refusal(`cannot parse ${p}: ${err instanceof Error ? err.message : String(err)}`, p);
  }
}

export function writeState(s: SetupState, env: NodeJS.ProcessEnv = process.env): void {
  const p = statePath(env);
  if (Object.keys(s.setups).length === 0) return rmSync(p, { force: true });
  mkdirSync(dirname(p), { recursive: true, mode: 0o700 });
  const tmp = `${p}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(s, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, p);
}

/** The record of the file at `path`, from this setup or another (for ownership checks). */
export function recordFor(s: SetupState, path: string, key: string): FileRecord | undefined {
  const own = s.setups[key]?.files.find((f) => f.path === path);
  return (
    own ??
    Object.values(s.setups)
      .flatMap((r) => r.files)
      .find((f) => f.path === path)
  );
}
