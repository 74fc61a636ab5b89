// A name used again, across two daemon processes sharing one PostgreSQL store (issue 11 F): a
// parked wait on daemon B of an account that daemon A removes and creates again is refused when
// mail for the new account arrives; B is told of the removal by nothing but the store.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MailClient } from '../../src/client/http-client.js';
import { MailError } from '../../src/wire/errors.js';
import { BUILT_CLI, serveProcess, type ServedDaemon } from '../support/serve-process.js';
import { freshSchema, noteFailure, pgSkip, sleep } from './support/pg.js';

function m4a(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BUILT_CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function addAccount(dir: string, id: string): string {
  const r = m4a(['admin', 'account', 'add', id, '--data-dir', dir, '--json']);
  assert.equal(r.status, 0, r.stderr);
  return (JSON.parse(r.stdout) as { secret: string }).secret;
}

describe('postgres: a name used again, across two daemons', { skip: pgSkip }, () => {
  let a: ServedDaemon;
  let b: ServedDaemon;
  const dirs: string[] = [];
  const clients: MailClient[] = [];
  const client = (d: ServedDaemon, token: string) => {
    const c = new MailClient({ url: d.url, token, timeoutMs: 60_000 });
    clients.push(c);
    return c;
  };

  before(async () => {
    assert.ok(existsSync(BUILT_CLI), 'run `npm run build` first (npm test does)');
    const { spec } = await freshSchema('reused_names');
    for (let i = 0; i < 2; i++) dirs.push(mkdtempSync(join(tmpdir(), `m4a-pg-f${i + 1}-`)));
    const env = { ...process.env, M4A_LOG_LEVEL: 'warn' };
    a = await serveProcess(['--data-dir', dirs[0]!, '--port', '0', '--store', spec], env);
    copyFileSync(join(dirs[0]!, 'operator.token'), join(dirs[1]!, 'operator.token'));
    b = await serveProcess(['--data-dir', dirs[1]!, '--port', '0', '--store', spec], env);
  });

  after(async () => {
    for (const c of clients) c.close();
    for (const d of [a, b]) {
      if (!d || d.child.exitCode !== null) continue;
      d.child.kill('SIGTERM');
      await d.exited;
    }
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("a parked wait on B of an account removed and added again through A is refused, never answered with the new account's mail", async () => {
    try {
      const bob = client(a, addAccount(dirs[0]!, 'bob'));
      const old = client(b, addAccount(dirs[0]!, 'temp1'));
      await old.whoami();
      const waiting = old.inbox({ wait_secs: 30 }).then(
        (ok) => ({ ok }),
        (err: unknown) => ({ err }),
      );
      await sleep(500); // parked on B
      const removed = m4a(['admin', 'account', 'remove', 'temp1', '--data-dir', dirs[0]!]);
      assert.equal(removed.status, 0, removed.stderr);
      const fresh = client(b, addAccount(dirs[0]!, 'temp1'));
      const mail = await bob.send({ to: 'temp1', subject: 'for the new temp1 only', body: 'its own secret' });
      const r = await Promise.race([waiting, sleep(10_000).then(() => 'pending' as const)]);
      assert.ok(r !== 'pending' && 'err' in r && r.err instanceof MailError && r.err.code === 'unauthenticated', `the old wait is refused, got ${JSON.stringify(r).slice(0, 300)}`);
      const [rc] = (await bob.receipts(mail.message_id)).receipts;
      assert.equal(rc?.surfaced_at, null, 'nobody has read the new mail');
      assert.deepEqual(
        (await fresh.inbox()).messages.map((m) => m.message_id),
        [mail.message_id],
        'the new account reads it on B',
      );
    } catch (err) {
      noteFailure();
      process.stderr.write(`# daemon A stderr:\n${a?.stderr()}\n# daemon B stderr:\n${b?.stderr()}\n`);
      throw err;
    }
  });
});
