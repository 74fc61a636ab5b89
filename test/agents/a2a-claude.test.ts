// An A2A client hands a task to a real Claude Code session that has never heard of A2A: the
// official SDK's client sends a message to the claude account's A2A endpoint, a real `claude -p`
// (wired by `m4a setup claude`, its model scripted on loopback) finds the task with m4a_task,
// moves it to working and completes it with a result, and the SDK client sees it completed with
// the result as an artifact.
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Message } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, createAuthenticatingFetchWithRetry } from '@a2a-js/sdk/client';
import { startScriptedAnthropic } from './support/scripted-anthropic.js';
import { describeRun, makeWorld } from './support/world.js';

const CLAUDE_QUIET: NodeJS.ProcessEnv = { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1' };

/** The JSON of the newest tool result in a Messages API request (what m4a_task answered). */
function lastToolResult(body: any): any {
  for (const m of [...(body?.messages ?? [])].reverse()) {
    const block = Array.isArray(m?.content) ? [...m.content].reverse().find((b: any) => b?.type === 'tool_result') : undefined;
    if (!block) continue;
    const text = Array.isArray(block.content) ? block.content.map((b: any) => b?.text ?? '').join('') : String(block.content);
    return JSON.parse(text);
  }
  throw new Error('no tool result in the request');
}

describe('A2A → a real Claude Code session', () => {
  it('a task sent by the A2A SDK client is worked and completed by claude -p, and the client sees the artifact', async (t: TestContext) => {
    const w = await makeWorld();
    t.after(() => w.close());
    await w.m4a(['setup', 'claude', '--project', w.project]);
    const requester = JSON.parse(await w.m4a(['admin', 'account', 'add', 'requester', '--json'])) as { secret: string };

    const fetchImpl = createAuthenticatingFetchWithRetry(fetch, {
      headers: async () => ({ authorization: `Bearer ${requester.secret}` }),
      shouldRetryWithHeaders: async () => undefined,
    });
    const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl })], clientConfig: { polling: true } });
    const a2a = await new ClientFactory(options).createFromUrl(`${w.url}/a2a/claude/`);
    const message: Message = {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: 'Count the TODOs\nin src/ and report the number' }, metadata: undefined, filename: '', mediaType: '' }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
    const sent = await a2a.sendMessage({ tenant: '', message, configuration: undefined, metadata: undefined });
    assert.ok('status' in sent, 'SendMessage answered with a task');
    const task = sent;
    assert.equal(task.status?.state, TaskState.TASK_STATE_SUBMITTED);

    const model = await startScriptedAnthropic([
      { tool: 'mcp__m4a__m4a_task', input: { action: 'list' } },
      { tool: 'mcp__m4a__m4a_task', input: (body) => ({ action: 'update', task_id: lastToolResult(body).tasks[0].task_id, state: 'working' }) },
      {
        tool: 'mcp__m4a__m4a_task',
        input: (body) => ({ action: 'update', task_id: lastToolResult(body).task_id, state: 'completed', result: { summary: '3 TODOs', data: { todos: 3 } } }),
      },
      { text: 'done' },
    ]);
    t.after(() => model.close());
    const r = await w.run('claude', ['-p', 'do the tasks assigned to you', '--output-format', 'json', '--allowedTools', 'mcp__m4a__m4a_task'], {
      cwd: w.project,
      env: { ...CLAUDE_QUIET, ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'test-key' },
      timeoutMs: 120_000,
    });
    t.diagnostic(`claude -p ran ${r.ms} ms`);
    assert.ok(r.code === 0 && !r.timedOut, describeRun(r));
    assert.deepEqual(model.problems, [], `offered: ${model.toolNames().join(', ')}`);
    const calls = model.exchanges();
    assert.equal(calls.length, 3);
    for (const c of calls) assert.equal(c.isError, false, `${JSON.stringify(c.input)}: ${c.result}`);
    assert.equal((calls[1]!.input as { task_id: string }).task_id, task.id, 'claude found the A2A task in its list');

    const got = await a2a.getTask({ tenant: '', id: task.id, historyLength: undefined });
    assert.equal(got.status?.state, TaskState.TASK_STATE_COMPLETED);
    const parts = got.artifacts[0]?.parts ?? [];
    assert.deepEqual(
      parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])),
      ['3 TODOs'],
    );
    assert.deepEqual(
      parts.flatMap((p) => (p.content?.$case === 'data' ? [p.content.value] : [])),
      [{ todos: 3 }],
    );
  });
});
