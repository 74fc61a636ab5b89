// Debian's postfix as a real MTA relaying into the daemon's SMTP door: a private instance (its own
// config, queue and log under a temp directory, no listener of its own) whose transport sends
// @agents.example.com to the door's port; one mail injected with `sendmail -C DIR` arrives in the
// account's inbox as mail from outside. Skipped, saying why, where postfix is not installed or the
// test cannot run it (it needs root, as postfix's own start does).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MailClient } from '../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { smtpPort } from './support/smtp-client.js';
import { until } from './support/until.js';

const DOMAIN = 'agents.example.com';
const skip = !existsSync('/usr/sbin/postfix')
  ? 'postfix is not installed (apt-get install postfix)'
  : process.getuid?.() !== 0
    ? 'a private postfix instance must be started as root'
    : false;

describe('postfix relaying into the SMTP door', { skip }, () => {
  let d: TestDaemon;
  let bob: MailClient;
  let dir: string;
  before(async () => {
    d = await startTestDaemon({ mailDomain: DOMAIN, smtp: '127.0.0.1:0' });
    ({ client: bob } = await d.account('bob'));
    dir = mkdtempSync(join(tmpdir(), 'm4a-postfix-'));
    chmodSync(dir, 0o755);
    const port = smtpPort(d.smtpUrl);
    writeFileSync(
      join(dir, 'main.cf'),
      [
        'compatibility_level = 3.6',
        `queue_directory = ${dir}/queue`,
        `data_directory = ${dir}/data`,
        `maillog_file = ${dir}/maillog`,
        `maillog_file_prefixes = ${dir}`,
        'mail_owner = postfix',
        'setgid_group = postdrop',
        'inet_interfaces = loopback-only',
        'inet_protocols = ipv4',
        'myhostname = mta.example.net',
        'mydomain = example.net',
        'mydestination =',
        `relay_domains = ${DOMAIN}`,
        `transport_maps = inline:{ ${DOMAIN}=smtp:[127.0.0.1]:${port} }`,
        'default_transport = error:only the test domain here',
        'smtp_tls_security_level = none',
        'smtp_dns_support_level = disabled',
        'smtputf8_enable = no',
        '',
      ].join('\n'),
    );
    // Debian's master.cf without its port 25 listener: the mail comes in by sendmail.
    const master = readFileSync('/etc/postfix/master.cf', 'utf8').replace(/^smtp\s+inet\b.*$/m, '#$&');
    writeFileSync(join(dir, 'master.cf'), master);
    mkdirSync(join(dir, 'queue'));
    mkdirSync(join(dir, 'data'));
    const postfixUid = Number(execFileSync('id', ['-u', 'postfix'], { encoding: 'utf8' }).trim());
    chownSync(join(dir, 'data'), postfixUid, -1); // its lock and caches are written as postfix
    execFileSync('/usr/sbin/postfix', ['-c', dir, 'start'], { stdio: 'pipe' });
  });
  after(async () => {
    if (dir) spawnSync('/usr/sbin/postfix', ['-c', dir, 'stop'], { stdio: 'pipe' });
    await d?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a mail injected into postfix reaches the inbox through the door', async () => {
    const mail = ['From: Carol <carol@example.org>', `To: bob@${DOMAIN}`, 'Subject: Through postfix', 'Message-ID: <pf-1@example.org>', '', 'Relayed by a real MTA.', ''].join(
      '\n',
    );
    execFileSync('/usr/sbin/sendmail', ['-C', dir, '-f', 'carol@example.org', '-i', `bob@${DOMAIN}`], { input: mail, stdio: ['pipe', 'pipe', 'pipe'] });
    const m = await until(
      'the mail arrives through postfix',
      async () => (await bob.inbox({ include_acked: true })).messages.find((x) => x.subject === 'Through postfix'),
      60_000,
      200,
    ).catch((err: unknown) => {
      const log = existsSync(join(dir, 'maillog')) ? readFileSync(join(dir, 'maillog'), 'utf8') : '(no maillog)';
      throw new Error(`${String(err)}\npostfix log:\n${log}`);
    });
    assert.equal(m.from, 'email:carol@example.org');
    assert.equal(m.from_kind, 'external');
    assert.ok(m.body?.includes('Relayed by a real MTA.'));
    assert.match(readFileSync(join(dir, 'maillog'), 'utf8'), /status=sent \(250 2\.6\.0 Stored as /);
  });
});
