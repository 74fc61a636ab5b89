// `m4a doctor` for opencode's plugin, per scope: the file setup wrote (read as text, never loaded),
// whether the module it imports exists and its account has a stored secret, and whether opencode
// will stall at start installing @opencode-ai/plugin (no node_modules/ or no lock entry there).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Check } from './doctor.js';
import type { CredentialsFile } from './credentials.js';
import { OPENCODE_PLUGIN_PACKAGE, opencodeConfigDir, opencodeFiles } from './setup/program-opencode.js';

function lockLists(folder: string): boolean {
  try {
    const lock = JSON.parse(readFileSync(join(folder, 'package-lock.json'), 'utf8')) as { packages?: Record<string, Record<string, Record<string, unknown> | undefined>> };
    const root = lock.packages?.[''] ?? {};
    return ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies'].some((k) => root[k]?.[OPENCODE_PLUGIN_PACKAGE] !== undefined);
  } catch {
    return false;
  }
}

export function opencodePluginChecks(env: NodeJS.ProcessEnv, project: string, creds: CredentialsFile): { checks: Check[]; found: number } {
  const checks: Check[] = [];
  let found = 0;
  for (const scope of [{ kind: 'user' as const }, { kind: 'project' as const, dir: project }]) {
    const f = opencodeFiles(scope, env);
    if (!existsSync(f.plugin)) continue;
    found++;
    const text = readFileSync(f.plugin, 'utf8');
    const module = /from\s+"([^"]+)"/.exec(text)?.[1];
    const account = /account:\s*"([^"]+)"/.exec(text)?.[1];
    const again = `run \`m4a setup opencode${scope.kind === 'project' ? ' --project .' : ''}\` again`;
    const problems = !module || !account ? [`${f.plugin} is not the file m4a setup writes`] : [];
    if (module && !existsSync(module)) problems.push(`${module} does not exist (build or reinstall mail4agent)`);
    if (account && !creds.accounts[account]) problems.push(`no secret for account ${account}`);
    // opencode installs into every config folder once any has a plugin: the user's too.
    for (const folder of new Set([f.folder, opencodeConfigDir(env)]))
      if (!existsSync(join(folder, 'node_modules')) || !lockLists(folder))
        problems.push(
          `opencode will install ${OPENCODE_PLUGIN_PACKAGE} into ${folder} at every start (about 78 s with no network): it needs node_modules/ and the package in package-lock.json there`,
        );
    checks.push({
      name: `opencode plugin (${scope.kind})`,
      status: problems.length ? 'fail' : 'ok',
      detail: problems.length ? problems.join('; ') : `plugin ${f.plugin} delivers mail into the session as account ${account}`,
      ...(problems.length ? { todo: again } : {}),
    });
  }
  return { checks, found };
}
