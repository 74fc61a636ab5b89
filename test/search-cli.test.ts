// m4a search, run as a user runs it (from the source tree, a daemon found through its data
// directory): results as JSON and as text with the «marked» snippet, a filter, a malformed query
// named by its field, and the cursor of the next page printed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';

const MAIN = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));

describe('m4a search', { timeout: 120_000 }, () => {
  let d: TestDaemon;
  let home: string;
  let env: Record<string, string>;
  const cli = (args: string[]) =>
    new Promise<{ status: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', MAIN, ...args, '--account', 'bob'],
        { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 },
        (err, stdout, stderr) => resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );

  before(async () => {
    d = await startTestDaemon();
    home = mkdtempSync(join(tmpdir(), 'm4a-search-cli-'));
    const bob = (await d.account('bob')).secret;
    const alice = (await d.account('alice')).client;
    const carol = (await d.account('carol')).client;
    await alice.send({ to: 'bob', subject: 'ocelot sighting', body: 'an ocelot near the build server' });
    await carol.send({ to: 'bob', subject: 'second ocelot', body: 'another one' });
    mkdirSync(join(home, 'mail4agent'));
    writeFileSync(join(home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts: { bob: { secret: bob } } }), { mode: 0o600 });
    env = { HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir };
  });
  after(async () => {
    await d?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('prints results, filters by sender, pages, and names a malformed query', async () => {
    const all = await cli(['search', 'ocelot', '--json']);
    assert.equal(all.status, 0, all.stderr);
    assert.deepEqual(
      JSON.parse(all.stdout).results.map((h: { subject: string }) => h.subject),
      ['second ocelot', 'ocelot sighting'],
    );
    const text = await cli(['search', 'ocelot', '--from', 'alice', '--limit', '1']);
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, /ocelot sighting/);
    assert.match(text.stdout, /an «ocelot» near/);
    assert.doesNotMatch(text.stdout, /second ocelot/);
    const paged = await cli(['search', 'ocelot', '--limit', '1']);
    const next = /--cursor (s1\.[12]\.\w+)/.exec(paged.stdout)?.[1];
    assert.ok(next, paged.stdout);
    const second = await cli(['search', 'ocelot', '--limit', '1', '--cursor', next, '--json']);
    assert.equal(second.status, 0, second.stderr);
    assert.deepEqual(
      JSON.parse(second.stdout).results.map((h: { subject: string }) => h.subject),
      ['ocelot sighting'],
    );
    const bad = await cli(['search', '"open', '--json']);
    assert.equal(bad.status, 1);
    assert.deepEqual((({ code, field }) => ({ code, field }))(JSON.parse(bad.stderr).error), { code: 'malformed', field: 'query' });
  });
});
