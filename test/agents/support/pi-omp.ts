// How the tests run pi (@mariozechner/pi-coding-agent, on Node) and omp (@oh-my-pi/pi-coding-agent,
// on the Bun binary of the npm `bun` package), both from test/agents/node_modules, against a
// scripted chat completions server (scripted-chat.ts): the custom provider `fake` with the model
// `scripted` written into the world's HOME (select it with `--model fake/scripted`), and the
// environment that keeps each offline. omp has no offline switch and reaches for several hosts at
// start (seven model catalogs and provider APIs, and local model servers on ports 11434, 8080 and
// 1234): its test files run in a loopback-only network namespace (scripts/test-agents.mjs), and the
// proxy variables below send its outside requests to a loopback port that refuses them.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_MODULES } from './world.js';

export type PiProgram = 'pi' | 'omp';

export const PI_CLI = join(AGENT_MODULES, '@mariozechner', 'pi-coding-agent', 'dist', 'cli.js');
export const OMP_CLI = join(AGENT_MODULES, '@oh-my-pi', 'pi-coding-agent', 'dist', 'cli.js');
/** The npm `bun` package's postinstall puts the platform's binary here (omp needs Bun ≥ 1.3.14). */
export const BUN = join(AGENT_MODULES, 'bun', 'bin', 'bun.exe');

/** The executable and the leading arguments that start each program; append the program's own. */
export function command(program: PiProgram): { cmd: string; args: string[] } {
  return program === 'pi' ? { cmd: process.execPath, args: [PI_CLI] } : { cmd: BUN, args: [OMP_CLI] };
}

/** The `--model` value that selects the scripted model. */
export const SCRIPTED_MODEL = 'fake/scripted';

/** A loopback port nothing listens on (privileged, outside the ephemeral range a test's daemon or
 *  model server gets): a proxy there refuses every connection at once. */
export const REFUSING_PROXY = 'http://127.0.0.1:9';

/** Each program's variables on top of the world's environment. pi: PI_OFFLINE (else it downloads
 *  fd and ripgrep). omp: no first-run wizard, and every outside request through a proxy that
 *  refuses, except loopback (the daemon and the model server). */
export function programEnv(program: PiProgram): NodeJS.ProcessEnv {
  if (program === 'pi') return { PI_OFFLINE: '1' };
  return {
    OMP_SKIP_SETUP: '1',
    HTTP_PROXY: REFUSING_PROXY,
    HTTPS_PROXY: REFUSING_PROXY,
    http_proxy: REFUSING_PROXY,
    https_proxy: REFUSING_PROXY,
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
  };
}

/** The custom provider both read, in the same shape: pi from ~/.pi/agent/models.json, omp from
 *  ~/.omp/agent/models.yml. `modelUrl` is the scripted server's http://127.0.0.1:PORT. */
export function providerConfig(modelUrl: string): Record<string, unknown> {
  return {
    providers: {
      fake: {
        baseUrl: `${modelUrl.replace(/\/+$/, '')}/v1`,
        api: 'openai-completions',
        apiKey: 'fake-key',
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: 'scripted', name: 'Scripted' }],
      },
    },
  };
}

/** Writes the scripted provider into `home` for the program; returns the file written. */
export function writeScriptedProvider(program: PiProgram, home: string, modelUrl: string): string {
  const dir = join(home, program === 'pi' ? '.pi' : '.omp', 'agent');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, program === 'pi' ? 'models.json' : 'models.yml');
  // JSON is YAML too (1.2): one text serves both files.
  writeFileSync(file, `${JSON.stringify(providerConfig(modelUrl), null, 2)}\n`);
  return file;
}
