// Which program an `m4a` command runs inside, from the variables each real program gave the
// processes it started (recorded from Gemini CLI 0.61, Qwen Code 0.24, opencode 1.18 and Copilot
// CLI 1.0 on this machine: their MCP servers, hooks and shell tools), and the account it then takes.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { chooseAccount, detectProvider, writeCredentials } from '../src/cli/credentials.js';
import { AGENT_PROGRAMS } from '../src/wire/capabilities.js';

const SEEN: ReadonlyArray<readonly [string, Record<string, string>, string]> = [
  ['gemini', { GEMINI_CLI: '1' }, 'its MCP server'],
  ['gemini', { GEMINI_SESSION_ID: '53dddd9d-c249-453a-a7c7-83f005431f1d' }, 'its hook'],
  ['qwen', { QWEN_CODE_SESSION_ID: 'ff907bad-9e0e-4bd8-90d9-bbbc943b9a4a' }, 'its MCP server and hooks'],
  ['qwen', { QWEN_CODE: '1' }, 'its shell tool'],
  ['opencode', { AGENT: '1', OPENCODE: '1', OPENCODE_PID: '16878' }, 'its MCP server and bash tool'],
  ['copilot', { COPILOT_AGENT_SESSION_ID: '8980d70c-ca53-40e1-8da8-b30a96e18415' }, 'its MCP server'],
  ['copilot', { COPILOT_CLI: '1' }, 'its hooks and tools'],
];

test('each program is named by the variables it gives its children; a program inside Copilot by its own', () => {
  for (const [program, env, where] of SEEN) assert.equal(detectProvider(env), program, `${program}: ${where}`);
  assert.equal(detectProvider({ COPILOT_CLI: '1', QWEN_CODE_SESSION_ID: 'q' }), 'qwen');
  assert.equal(detectProvider({ COPILOT_CLI: '1', OPENCODE: '1' }), 'opencode');
  assert.equal(detectProvider({ AGENT: '1' }), undefined, 'AGENT alone names no program');
  assert.equal(detectProvider({}), undefined);
});

test('the account set up for the program it runs inside; with none, the error names every program setup takes', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'm4a-detect-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = { M4A_CREDENTIALS: join(dir, 'credentials.json') };
  const none = chooseAccount(undefined, env);
  assert.ok('error' in none);
  assert.ok(none.error.includes(`m4a setup ${AGENT_PROGRAMS.join('|')}`), none.error);
  for (const p of ['qwen', 'opencode', 'copilot']) assert.ok(none.error.includes(p), p);

  writeCredentials(
    {
      version: 1,
      accounts: { qw: { secret: 'sq', provider: 'qwen' }, oc: { secret: 'so', provider: 'opencode' }, cp: { secret: 'sc', provider: 'copilot' } },
    },
    env,
  );
  assert.deepEqual(chooseAccount(undefined, { ...env, QWEN_CODE_SESSION_ID: 'q' }), { account: 'qw', secret: 'sq', source: 'qwen session' });
  assert.deepEqual(chooseAccount(undefined, { ...env, OPENCODE: '1', OPENCODE_PID: '7' }), { account: 'oc', secret: 'so', source: 'opencode session' });
  assert.deepEqual(chooseAccount(undefined, { ...env, COPILOT_CLI: '1' }), { account: 'cp', secret: 'sc', source: 'copilot session' });
  const unknown = chooseAccount(undefined, env);
  assert.ok('error' in unknown && unknown.error.startsWith('several accounts'));
});
