// What the pi tests share: a world with `m4a setup pi` done and an account of the test's own
// (`tester`, to send from and read the directory with), cleanups that run before the world closes,
// pi in RPC mode against a scripted model, and readers for what pi and the daemon recorded.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { mkdirSync, realpathSync } from 'node:fs';
import { MailClient } from '../../../src/client/http-client.js';
import type { DirectoryDetail, SessionOut } from '../../../src/wire/ops.js';
import { writeScriptedProvider } from './pi-omp.js';
import { startPiRpc, type PiEvent, type PiRpc } from './pi-rpc.js';
import { contentText, startScriptedChat, type ChatTurn, type ScriptedChat } from './scripted-chat.js';
import { makeWorld, type World } from './world.js';

/** How every injected batch begins. */
export const MAIL = '📬 You have new mail in mail4agent:';
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface Ctx {
  w: World;
  /** An account of the test's own, to send from and read the directory with. */
  tester: MailClient;
  /** Cleanups, run last first, all before the world closes: a pi still running would start the
   *  daemon again once it is stopped (its extension reconnects). */
  later(f: () => unknown): void;
}

export async function world(t: TestContext, prefix: string): Promise<Ctx> {
  const w = await makeWorld(prefix);
  const undo: (() => unknown)[] = [];
  t.after(async () => {
    for (const f of undo.reverse()) {
      // One failing cleanup must not leave the others (and the daemon) running.
      await Promise.resolve()
        .then(f)
        .catch((err: unknown) => process.stderr.write(`cleanup failed: ${String(err)}\n`));
    }
    await w.close();
  });
  await w.m4a(['setup', 'pi']);
  const { secret } = JSON.parse(await w.m4a(['admin', 'account', 'add', 'tester', '--json']));
  const tester = new MailClient({ url: w.url, token: secret });
  undo.push(() => tester.close());
  return { w, tester, later: (f) => void undo.push(f) };
}

export async function chat(c: Ctx, script: ChatTurn[]): Promise<ScriptedChat> {
  const server = await startScriptedChat(script);
  c.later(() => server.close());
  writeScriptedProvider('pi', c.w.home, server.url);
  return server;
}

/** A pi in RPC mode in `dir`, killed (and waited for) when the test ends. */
export function pi(c: Ctx, dir: string, args: string[] = []): PiRpc {
  mkdirSync(dir, { recursive: true });
  const p = startPiRpc(c.w, { cwd: dir, args });
  c.later(async () => {
    p.kill();
    await Promise.race([p.exited, sleep(5_000)]);
  });
  return p;
}

export const parseJson = (text: string | null | undefined, what: string): any => {
  assert.ok(typeof text === 'string', `${what}: no result came back`);
  try {
    return JSON.parse(text.slice(text.indexOf('{')));
  } catch {
    assert.fail(`${what}: not JSON: ${text}`);
  }
};

/** A tool message's text in a chat completions request. */
export const toolOutput = (body: any, callId: string): string | undefined =>
  (body?.messages as any[] | undefined)?.filter((m) => m?.role === 'tool' && m.tool_call_id === callId).map((m) => contentText(m.content))[0];

/** The user messages pi put into its conversation, in order (typed and injected alike). */
export const userTurns = (events: PiEvent[]): PiEvent[] => events.filter((e) => e.ev?.type === 'message_start' && e.ev.message?.role === 'user');
export const textOf = (e: PiEvent): string => contentText(e.ev.message.content);
export const isMailFor = (id: string) => (ev: any) =>
  ev?.type === 'message_start' && ev.message?.role === 'user' && contentText(ev.message.content).startsWith(MAIL) && contentText(ev.message.content).includes(id);

export const agentEnd = (p: PiRpc, from: number, what = 'the turn to end'): Promise<PiEvent> => p.waitFor(what, (ev) => ev?.type === 'agent_end', 30_000, from);

export async function sessions(tester: MailClient, account: string): Promise<SessionOut[]> {
  const d: DirectoryDetail = await tester.directory({ detail: true, include_ended: true });
  return d.accounts.find((a) => a.id === account)?.sessions ?? [];
}

/** The session a printed address (account/slug, account/@alias or the full address) names. */
export async function sessionOf(tester: MailClient, printed: string): Promise<SessionOut> {
  const [account] = printed.split('/');
  const all = await sessions(tester, account!);
  const s = all
    .filter((x) => x.live || x.successor === null)
    .find((x) => x.address === printed || `${account}/${x.slug}` === printed || x.aliases.some((a) => `${account}/${a}` === printed));
  assert.ok(s, `no session ${printed} among ${JSON.stringify(all.map((x) => [x.address, x.slug, x.aliases]))}`);
  return s;
}

/** The card attests the pi process and names its conversation. */
export function assertPiCard(s: SessionOut, p: PiRpc, sessionId: string): void {
  const card = s.card as any;
  assert.equal(card.attested?.pid, p.pid, `${s.address} is attested to ${card.attested?.pid}, not the pi process ${p.pid}: ${JSON.stringify(card)}`);
  assert.equal(card.attested.exe, realpathSync(process.execPath), 'pi runs on node');
  assert.equal(card.corroborated?.provider, 'pi', JSON.stringify(card));
  assert.equal(card.corroborated.provider_session_id, sessionId, JSON.stringify(card));
}
