// The file side of setup and unsetup, without the daemon: plan every file (refusing before any
// write), then write them and the state record. Tests drive this directly on a temporary HOME.
import { isDeepStrictEqual } from 'node:util';
import { applySetup, applyUnsetup, backupPath, type Written } from './apply.js';
import { resolveBridge, type Bridge } from './bridge-command.js';
import { guardPath } from './path-guard.js';
import { planSetup, planUnsetup, type Change } from './plan.js';
import { targets, type Program, type Scope, type Transport } from './programs.js';
import { readState, recordFor, stateKey, writeState, type FileRecord, type SetupRecord } from './state.js';

export interface SetupOptions {
  program: Program;
  scope: Scope;
  transport: Transport;
  account: string;
  force?: boolean;
  /** Install the hooks that wake agents (default true); false also removes ones installed before. */
  hooks?: boolean;
  env?: NodeJS.ProcessEnv;
  bridge?: Bridge;
}

const hasWhole = (r: FileRecord): boolean => r.edits.some((e) => e.kind === 'whole');

/** Every file a plan may write or delete, and its backup (a whole file of ours), before reading. */
function guardFiles(scope: Scope, files: { path: string; whole: boolean }[]): void {
  for (const f of files) {
    guardPath(scope, f.path, f.whole);
    guardPath(scope, backupPath(f.path), true);
  }
}

export interface Prepared {
  bridge: Bridge;
  changes: Change[];
  commit(): Written[];
}

export function prepareSetup(o: SetupOptions): Prepared {
  const env = o.env ?? process.env;
  const bridge = o.bridge ?? resolveBridge(env);
  const state = readState(env);
  const key = stateKey(o.program, o.scope);
  const ts = targets({ ...o, env, bridge });
  const own = state.setups[key]?.files ?? [];
  guardFiles(o.scope, [...ts.map((t) => ({ path: t.path, whole: t.kind === 'whole' })), ...own.map((r) => ({ path: r.path, whole: hasWhole(r) }))]);
  const changes = planSetup(ts, (p) => recordFor(state, p, key), !!o.force, own);
  return {
    bridge,
    changes,
    commit: () => {
      const written = applySetup(changes);
      const record: SetupRecord = {
        program: o.program,
        scope: o.scope.kind,
        project_dir: o.scope.kind === 'project' ? o.scope.dir : null,
        account: o.account,
        transport: o.transport,
        updated_at: new Date().toISOString(),
        files: changes.flatMap((c) => (c.record ? [c.record] : [])),
      };
      // A run that changes nothing leaves the state file byte-identical too.
      const fresh = readState(env);
      const prior = fresh.setups[key];
      if (prior && isDeepStrictEqual({ ...prior, updated_at: '' }, { ...record, updated_at: '' })) return written;
      fresh.setups[key] = record;
      writeState(fresh, env);
      return written;
    },
  };
}

export const setupFiles = (o: SetupOptions): Written[] => prepareSetup(o).commit();

export interface Undone {
  record: SetupRecord | null;
  files: Written[];
  notes: string[];
}

export function unsetupFiles(o: { program: Program; scope: Scope; env?: NodeJS.ProcessEnv }): Undone {
  const env = o.env ?? process.env;
  const state = readState(env);
  const key = stateKey(o.program, o.scope);
  const record = state.setups[key];
  if (!record) return { record: null, files: [], notes: [] };
  // An edit another setup also holds stays for it (opencode's install guard in the user's config
  // folder serves its user and its project setups alike).
  const others = Object.entries(state.setups).flatMap(([k, r]) => (k === key ? [] : r.files));
  const mine = record.files.map((f) => {
    const shared = others.filter((o) => o.path === f.path).flatMap((o) => o.edits);
    return shared.length ? { ...f, edits: f.edits.filter((e) => !shared.some((s) => isDeepStrictEqual(s, e))) } : f;
  });
  guardFiles(
    o.scope,
    mine.map((r) => ({ path: r.path, whole: hasWhole(r) })),
  );
  const changes = planUnsetup(mine);
  const files = applyUnsetup(changes);
  delete state.setups[key];
  writeState(state, env);
  return { record, files, notes: changes.flatMap((c) => (c.note ? [c.note] : [])) };
}
