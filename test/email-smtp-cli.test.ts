// `m4a serve --smtp …` as an operator types it (the built CLI, dist/): flags that cannot work are
// one startup line naming the mistake; a daemon with --smtp, --mail-domain, --mail-alias and
// --smtp-max-bytes takes mail for the alias under its own cap, and SIGTERM closes the listener.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MailClient } from '../src/client/http-client.js';
import { BUILT_CLI, serveProcess } from './support/serve-process.js';
import { refusal, smtpPort, transport } from './support/smtp-client.js';
import { until } from './support/until.js';

const dirs: string[] = [];
const dataDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'm4a-smtp-cli-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** `m4a serve ARGS` that must refuse to start: its exit status and stderr. */
function refusedStart(args: string[]): Promise<{ status: number; stderr: string }> {
  return new Promise((resolve) =>
    execFile(process.execPath, [BUILT_CLI, 'serve', '--port', '0', '--store', 'memory', '--data-dir', dataDir(), ...args], { timeout: 20_000 }, (err, _out, stderr) =>
      resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
    ),
  );
}

describe('m4a serve --smtp', () => {
  it('refuses flags that cannot work, each with one line naming it', async () => {
    const cases: [string[], RegExp][] = [
      [['--smtp', '127.0.0.1:0'], /m4a: cannot start: email_unavailable: --smtp needs --mail-domain DOMAIN/],
      [['--smtp', '0.0.0.0:0', '--mail-domain', 'agents.example.com'], /smtp_not_loopback: --smtp 0\.0\.0\.0:0 is not a loopback address; add --smtp-lan/],
      [['--smtp', 'localhost', '--mail-domain', 'agents.example.com'], /malformed: --smtp wants ADDR:PORT/],
      [['--smtp', '127.0.0.1:0', '--mail-domain', 'not a domain'], /malformed: --mail-domain wants a host name/],
      [['--smtp', '127.0.0.1:0', '--mail-domain', 'agents.example.com', '--smtp-max-bytes', '0'], /malformed: --smtp-max-bytes is a whole number from 1 to 104857600, not 0/],
      [['--smtp-lan', '--mail-domain', 'agents.example.com'], /malformed: --smtp-lan without --smtp/],
      [['--mail-alias', 'help=bob'], /email_unavailable: --mail-alias needs --mail-domain/],
    ];
    for (const [args, line] of cases) {
      const r = await refusedStart(args);
      assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, line);
    }
    const bad = await refusedStart(['--mail-domain', 'agents.example.com', '--mail-alias', 'no-equals']);
    assert.equal(bad.status, 2, 'a malformed --mail-alias is a usage error');
    assert.match(bad.stderr, /LOCAL=ACCOUNT/);
  });

  it('takes mail for an alias under --smtp-max-bytes; SIGTERM closes the listener', async () => {
    const dir = dataDir();
    const served = await serveProcess([
      '--port',
      '0',
      '--data-dir',
      dir,
      '--store',
      'memory',
      '--no-stream',
      '--smtp',
      '127.0.0.1:0',
      '--mail-domain',
      'agents.example.com',
      '--mail-alias',
      'help=bob',
      '--smtp-max-bytes',
      '2000',
    ]);
    let port = 0;
    try {
      const out = await until('the SMTP line', () => {
        const m = /receiving e-mail for @agents\.example\.com on (smtp:\/\/127\.0\.0\.1:\d+)/.exec(served.stdout());
        return m?.[1];
      });
      port = smtpPort(out);
      const operator = new MailClient({ url: served.url, token: readFileSync(join(dir, 'operator.token'), 'utf8').trim() });
      const bob = new MailClient({ url: served.url, token: (await operator.admin.accountAdd({ id: 'bob' })).secret });
      const mailer = transport(port);
      await mailer.sendMail({ from: 'someone@example.org', to: 'help@agents.example.com', subject: 'Help please', text: 'short' });
      const e = await refusal(mailer.sendMail({ from: 'someone@example.org', to: 'help@agents.example.com', subject: 'Too long', text: 'x'.repeat(2500) }));
      assert.equal(e.responseCode, 552);
      assert.match(e.response ?? '', /5\.3\.4 Message too big: \d+ bytes, this server takes at most 2000/);
      mailer.close();
      const inbox = await bob.inbox({ include_acked: true });
      assert.deepEqual(
        inbox.messages.map((m) => [m.from, m.from_kind, m.subject]),
        [['email:someone@example.org', 'external', 'Help please']],
      );
      assert.match(served.stderr(), /"code":"smtp_too_large"/, 'the refusal is in the log');
      bob.close();
      operator.close();
    } finally {
      served.child.kill('SIGTERM');
    }
    assert.equal(await served.exited, 0);
    const after = await new Promise<string>((resolve) => {
      const c = connect(port, '127.0.0.1');
      c.once('connect', () => resolve('connected'));
      c.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    });
    assert.equal(after, 'ECONNREFUSED');
  });
});
