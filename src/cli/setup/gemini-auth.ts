// Gemini CLI's auth choice is the user's: setup writes none. Without one a headless run (`gemini -p`,
// and so every wake turn driven by a script) exits 41 before its first request (§11). This says
// whether a choice is made and, if not, what to set.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'jsonc-parser';

/** The variables Gemini CLI picks an auth method from when settings name none (its
 *  getAuthTypeFromEnv). A key beside GOOGLE_GEMINI_BASE_URL picks "gateway", which fails (§11). */
const AUTH_ENV: [string, (env: NodeJS.ProcessEnv) => boolean][] = [
  ['GOOGLE_GENAI_USE_GCA', (env) => env.GOOGLE_GENAI_USE_GCA === 'true'],
  ['GOOGLE_GENAI_USE_VERTEXAI', (env) => env.GOOGLE_GENAI_USE_VERTEXAI === 'true'],
  ['GEMINI_API_KEY', (env) => !!env.GEMINI_API_KEY && !env.GOOGLE_GEMINI_BASE_URL],
];

/** What a user sets to choose (capabilities lists them): the settings key, or one of the variables. */
export const GEMINI_AUTH_SETTINGS: readonly string[] = ['security.auth.selectedType', ...AUTH_ENV.map(([name]) => name)];

function selectedType(file: string): string | null {
  if (!existsSync(file)) return null;
  try {
    const v = parse(readFileSync(file, 'utf8'), [], { allowTrailingComma: true }) as { security?: { auth?: { selectedType?: unknown } } } | null;
    const t = v?.security?.auth?.selectedType;
    return typeof t === 'string' && t !== '' ? t : null;
  } catch {
    return null;
  }
}

/** Where the auth choice comes from (a settings file or a variable), or null when there is none. */
export function geminiAuthSource(env: NodeJS.ProcessEnv, project: string | null): string | null {
  const home = env.HOME || homedir();
  for (const file of [...(project ? [join(project, '.gemini', 'settings.json')] : []), join(home, '.gemini', 'settings.json')]) {
    const t = selectedType(file);
    if (t) return `security.auth.selectedType "${t}" in ${file}`;
  }
  const v = AUTH_ENV.find(([, ok]) => ok(env));
  return v ? `${v[0]} in this environment` : null;
}

/** What the user must set, for setup's to-do list and doctor. */
export const GEMINI_AUTH_TODO =
  'Gemini CLI leaves the auth method to you, and without one a headless run (gemini -p) exits 41: set security.auth.selectedType in ~/.gemini/settings.json ("gemini-api-key" with GEMINI_API_KEY set, "oauth-personal" after a login, or "vertex-ai"), or set GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI=true or GOOGLE_GENAI_USE_GCA=true where Gemini CLI starts (GEMINI_DEFAULT_AUTH_TYPE preselects it in interactive sessions only). Setup writes no auth setting and no key.';
