// The agent programs' own configuration homes reach the daemon an agent auto-starts and the wake
// programs it runs, so a woken `copilot --resume=…` or `qwen` reads the user's settings; secrets
// beside them do not.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { daemonEnv, wakeProgramEnv } from '../src/wire/inherited-env.js';

const from = {
  PATH: '/bin',
  CODEX_HOME: '/h/.codex',
  CLAUDE_CONFIG_DIR: '/h/.claude',
  COPILOT_HOME: '/h/.copilot',
  QWEN_HOME: '/h/.qwen',
  COPILOT_PROVIDER_API_KEY: 'k',
  COPILOT_AGENT_SESSION_ID: 'a2b1c3d4-0000-4000-8000-000000000000',
  QWEN_CODE_SESSION_ID: 'b2b1c3d4-0000-4000-8000-000000000000',
};

it('the configuration homes pass to the daemon and to wake programs; keys and session ids do not', () => {
  for (const env of [daemonEnv(from), wakeProgramEnv(from)]) {
    for (const k of ['CODEX_HOME', 'CLAUDE_CONFIG_DIR', 'COPILOT_HOME', 'QWEN_HOME']) assert.equal(env[k], from[k as keyof typeof from], k);
    for (const k of ['COPILOT_PROVIDER_API_KEY', 'COPILOT_AGENT_SESSION_ID', 'QWEN_CODE_SESSION_ID']) assert.equal(env[k], undefined, k);
  }
});
