// `m4a doctor` for pi and omp: the extension file setup wrote, per program and scope, read as text
// (never loaded): whether the module it imports exists and its account has a stored secret.
import { existsSync, readFileSync } from 'node:fs';
import { EXTENSION_PROVIDERS } from '../wire/capabilities.js';
import type { Check } from './doctor.js';
import type { CredentialsFile } from './credentials.js';
import { extensionFile } from './setup/programs.js';

export function extensionChecks(env: NodeJS.ProcessEnv, project: string, creds: CredentialsFile): { checks: Check[]; found: number } {
  const checks: Check[] = [];
  let found = 0;
  for (const program of EXTENSION_PROVIDERS) {
    for (const scope of [{ kind: 'user' as const }, { kind: 'project' as const, dir: project }]) {
      const file = extensionFile(program, scope, env);
      if (!existsSync(file)) continue;
      found++;
      const text = readFileSync(file, 'utf8');
      const module = /from\s+"([^"]+)"/.exec(text)?.[1];
      const account = /account:\s*"([^"]+)"/.exec(text)?.[1];
      const name = `${program} (${scope.kind})`;
      if (!module || !account) {
        checks.push({
          name,
          status: 'fail',
          detail: `${file} is not the file m4a setup writes`,
          todo: `run \`m4a setup ${program}${scope.kind === 'project' ? ' --project .' : ''}\``,
        });
        continue;
      }
      const problems = [
        !existsSync(module) ? `${module} does not exist (build or reinstall mail4agent)` : '',
        creds.accounts[account] ? '' : `no secret for account ${account}`,
      ].filter(Boolean);
      checks.push({
        name,
        status: problems.length ? 'fail' : 'ok',
        detail: problems.length ? problems.join('; ') : `extension ${file} delivers mail live as account ${account}`,
        ...(problems.length ? { todo: `run \`m4a setup ${program}\` again` } : {}),
      });
    }
  }
  return { checks, found };
}
