// The steps the Gemini CLI and Qwen Code live tests share: agents whose turn-end hook (AfterAgent,
// Stop) brings mail, or in listen mode parks until mail wakes it. Each check is written once here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { hookProcesses } from './stop-hooks.js';
import type { TestContext } from 'node:test';
import type { CallExchange } from './scripted-openai.js';
import { describeRun, type ProcInfo, type RunResult, type World } from './world.js';

/** What both scripted model servers (chat completions, Gemini API) record. */
export interface ScriptedModel {
  requests: { turn: number | null; at: number; body: any }[];
  remaining(): number;
  exchanges(): CallExchange[];
  toolNames(): string[];
  problems: string[];
}

/** A tool result's JSON (the agent may wrap an MCP tool's text, e.g. in <untrusted_context> tags). */
export const parseJson = (text: string | null | undefined, what: string): any => {
  assert.ok(typeof text === 'string', `${what}: no result came back`);
  try {
    return JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1));
  } catch {
    assert.fail(`${what}: not JSON: ${text}`);
  }
};

/** The attested process of a card among those seen under a run. */
export function attestedProcess(card: any, r: RunResult): ProcInfo {
  const a = card?.attested;
  assert.ok(a && typeof a.pid === 'number', `the card has no attested process: ${JSON.stringify(card)}`);
  const p = r.seen.find((s) => s.pid === a.pid && s.startTime === a.start_time);
  assert.ok(p, `attested pid ${a.pid} is not a process of this run (spawned ${r.pid}); seen: ${r.seen.map((s) => `${s.pid}<-${s.ppid} ${s.exe}`).join('; ')}`);
  return p;
}

/** The peer's own call to the daemon, with its secret. */
export async function peerCall(w: World, secret: string, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${w.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const out = await res.json();
  assert.equal(res.status, 200, `${path}: ${JSON.stringify(out)}`);
  return out;
}

/** When the daemon stored a message (its first receipt), as the sender sees it. */
export async function storedAt(w: World, secret: string, id: string): Promise<number> {
  const rc = JSON.parse(await w.m4a(['receipts', id, '--json'], { env: { M4A_TOKEN: secret } }));
  const t = Date.parse(rc.receipts?.[0]?.stored_at);
  assert.ok(Number.isFinite(t), `no stored_at in ${JSON.stringify(rc)}`);
  return t;
}

/** Every figure is a real, bounded duration (not negative, within the run). */
export function assertBounded(fig: Record<string, number>, limitMs: number): void {
  for (const [k, v] of Object.entries(fig)) assert.ok(v >= 0 && v < limitMs, `${k}: ${v} ms`);
}

/** The run ended by itself, the script fitted what the agent offered, and every turn was taken. */
export function assertRanClean(t: TestContext, what: string, r: RunResult, model: ScriptedModel): void {
  t.diagnostic(`${what} ran ${r.ms} ms`);
  assert.ok(r.code === 0 && !r.timedOut, `${what} did not succeed:\n${describeRun(r)}`);
  assert.deepEqual(model.problems, [], `offered: ${model.toolNames().join(', ')}`);
  assert.equal(model.remaining(), 0, `every scripted turn was taken:\n${describeRun(r)}`);
}

/** whoami: the agent's own innermost process (not its launcher), provider and cwd corroborated. */
export function assertWhoami(me: any, r: RunResult, w: World, provider: string, notLauncher: string): void {
  assert.equal(me.account, provider);
  assert.match(me.address, new RegExp(`^${provider}/s-[0-9a-f]+$`));
  const p = attestedProcess(me.card, r);
  assert.equal(me.card.corroborated.provider, provider, JSON.stringify(me.card));
  assert.equal(me.card.corroborated.cwd, w.project);
  assert.notEqual(p.pid, r.pid, notLauncher);
}

/** send: the peer has exactly one such message, from the session whoami named. */
export async function assertPeerGot(w: World, secret: string, me: any, sendOutput: string | null | undefined, subject: string, body: string): Promise<void> {
  const sent = parseJson(sendOutput, 'send');
  assert.equal(sent.from, `${me.account}/${me.slug}`);
  const got = (await peerCall(w, secret, '/mail/inbox', {})).messages.filter((x: any) => x.subject === subject);
  assert.equal(got.length, 1);
  assert.equal(got[0].from, sent.from);
  assert.equal(got[0].body, body);
}

/** The turn-end hook's reason (the next user text) names only the new mail, and the model read it. */
export function assertTurnEndWake(label: string, reason: string, late: any, before: any, inbox: CallExchange | undefined): void {
  assert.ok(late, 'the late mail was sent');
  assert.ok(reason.includes(late.message_id) && reason.includes('You have new mail in mail4agent'), `${label}: ${reason}`);
  assert.ok(!reason.includes(before.message_id), 'only mail new since the last notice');
  assert.ok(inbox?.output?.includes(late.message_id), `the model read the new mail: ${inbox?.output}`);
}

/** unsetup leaves the user's file exactly as given. */
export async function assertUnsetupGivesBack(w: World, agent: string, file: string, expected: string, what: string): Promise<void> {
  await w.m4a(['unsetup', agent]);
  assert.equal(readFileSync(file, 'utf8'), expected, what);
}

/** Send commit → the model request that carried it, in ms. */
export async function commitToRequest(w: World, secret: string, id: string, req: { at: number }): Promise<number> {
  return req.at - (await storedAt(w, secret, id));
}

/** Listen mode: once the model's turn `afterTurn` was requested and the hook has been parked a
 *  second, the peer sends. Returns a getter for the sent mail (null if never sent). */
export function sendWhenHookParked(
  w: World,
  model: ScriptedModel,
  hook: string,
  afterTurn: number,
  limitMs: number,
  abandoned: () => boolean,
  send: () => Promise<any>,
): () => any {
  let sent: any = null;
  void (async () => {
    const deadline = Date.now() + limitMs;
    let since = 0;
    while (!abandoned() && Date.now() < deadline) {
      if (model.requests.some((q) => q.turn === afterTurn) && hookProcesses(w.dataDir, hook).length > 0) {
        since ||= Date.now();
        if (Date.now() - since >= 1_000) break;
      } else since = 0;
      await new Promise((r) => setTimeout(r, 20));
    }
    if (!abandoned()) sent = await send().catch(() => null);
  })();
  return () => sent;
}

/** Listen mode: the model turned it on, read the mail the hook's reason named, turned it off; the
 *  receipt says the mail answered the parked hook. Returns commit → surfaced and → model request. */
export async function assertListenWake(
  w: World,
  secret: string,
  agent: string,
  hookLabel: string,
  sent: any,
  reason: string,
  reasonReq: { at: number },
  [on, inbox, off]: CallExchange[],
  limitMs: number,
): Promise<{ surfaced: number; request: number }> {
  assert.match(on?.output ?? '', new RegExp(`listen mode on for ${agent}/s-`), `m4a listen on: ${on?.output}`);
  assert.ok(sent, `the mail was sent while ${hookLabel} listened`);
  assert.ok(reason.includes(sent.message_id), `${hookLabel}'s reason names the mail: ${reason}`);
  assert.ok(inbox?.output?.includes(sent.message_id), `the model read it: ${inbox?.output}`);
  assert.match(off?.output ?? '', /listen mode off/, `m4a listen off: ${off?.output}`);
  const rc = JSON.parse(await w.m4a(['receipts', sent.message_id, '--json'], { env: { M4A_TOKEN: secret } }));
  assert.deepEqual(
    rc.receipts[0].signalled.map((s: any) => s.adapter),
    ['wait'],
    `the mail answered the parked hook: ${JSON.stringify(rc)}`,
  );
  const stored = Date.parse(rc.receipts[0].stored_at);
  const fig = { surfaced: Date.parse(rc.receipts[0].surfaced_at) - stored, request: reasonReq.at - stored };
  assertBounded(fig, limitMs);
  return fig;
}
