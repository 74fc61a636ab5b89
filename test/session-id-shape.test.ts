// A program's session id from a helper's environment is the id `m4a open` later puts on the
// resumed program's command line (`gemini --resume ID`). A helper the model runs (Gemini's shell
// tool, before any hook named the id) may set the variable to anything: a value shaped as an
// option (`--yolo`) would become an option of the program the person resumes. Such a value names
// no session (real processes, real attestation), and `m4a open` refuses a card holding one.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_SCRIPT, startAgent, type AgentProc } from './support/agent.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { resumeOf } from '../src/cli/open-commands.js';

const G1 = '53dddd9d-c249-453a-a7c7-83f005431f1d';

interface Card {
  session: string;
  card: { corroborated: { provider?: string; provider_session_id?: string } };
}

describe('a session id shaped as an option', () => {
  let d: TestDaemon;
  let tmp: string;
  let secret: string;
  const procs: AgentProc[] = [];

  before(async () => {
    d = await startTestDaemon();
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'm4a-idshape-')));
    writeFileSync(join(tmp, 'package.json'), '{"type":"module"}');
    copyFileSync(AGENT_SCRIPT, join(tmp, 'gemini'));
    secret = (await d.account('gm')).secret;
  });
  after(async () => {
    for (const p of procs) await p.exit();
    await d.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  /** whoami from a helper the agent runs (a shell with its own connection), `env` in its environment only. */
  const helperWhoami = async (p: AgentProc, env: Record<string, string>): Promise<Card> => {
    const url = new URL(d.url);
    const script = [
      `exec 3<>/dev/tcp/${url.hostname}/${url.port}`,
      `printf 'POST /mail/whoami HTTP/1.1\\r\\nHost: %s\\r\\nAuthorization: Bearer %s\\r\\nContent-Type: application/json\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\n{}' "$HOSTPORT" "$TOKEN" >&3`,
      'while IFS= read -r line <&3 || [ -n "$line" ]; do printf \'%s\\n\' "$line"; done',
    ].join('\n');
    const out = (await p.call('bash', { script, env: { ...env, HOSTPORT: url.host, TOKEN: secret } })).body as string;
    return JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4).trim()) as Card;
  };

  it("Gemini's card does not take GEMINI_SESSION_ID=--yolo from its shell tool, and takes the hook's real id after it", async () => {
    const g = await startAgent(d.url, secret, { script: join(tmp, 'gemini'), cwd: tmp });
    procs.push(g);
    const first = (await g.call('/mail/whoami')).body as Card;
    assert.equal(first.card.corroborated.provider, 'gemini');
    for (const forged of ['--yolo', '-y', 'a b', '$(touch /tmp/x)']) {
      const shell = await helperWhoami(g, { GEMINI_SESSION_ID: forged });
      assert.equal(shell.session, first.session);
      assert.equal(shell.card.corroborated.provider_session_id, undefined, `${forged} is no session id`);
    }
    const hook = await helperWhoami(g, { GEMINI_SESSION_ID: G1 });
    assert.equal(hook.card.corroborated.provider_session_id, G1);
  });

  it('m4a open refuses a card whose id is shaped as an option (one stored before this check)', () => {
    const card = { attested: null, corroborated: { provider: 'gemini', provider_session_id: '--yolo', cwd: '/x' }, declared: {} };
    const s = { account: 'gm', address: 'gm/s-1', slug: null, aliases: [], live: false, last_seen: '', ended_at: null, successor: null, card };
    assert.throws(
      () => resumeOf(s),
      (e: { code?: string; details?: { field?: string } }) => e.code === 'not_supported' && e.details?.field === 'provider_session_id',
    );
  });
});
