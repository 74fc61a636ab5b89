// `m4a setup pi` and `m4a setup omp` with the real CLI, user scope and --project, in a HOME that
// already holds someone's own extensions: a second run changes nothing (every file "unchanged",
// the setup state as it was), `m4a unsetup` leaves HOME and the project byte for byte as they were
// (folders setup made are gone again), and no account secret is in any file outside the
// credentials file. Neither program runs: the files are the whole of what setup does for them.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { filesUnder, snapshotTree } from './support/file-tree.js';
import { DIST_MAIN, makeWorld } from './support/world.js';

it('m4a setup pi and omp: twice is a no-op, unsetup leaves every file byte for byte, no secret written', async (t) => {
  const w = await makeWorld('m4a-pi-setup-');
  t.after(() => w.close());
  // Someone's own extensions are there already; the project has an omp folder but no pi one.
  for (const [dir, name] of [
    [join(w.home, '.pi', 'agent', 'extensions'), 'theirs.ts'],
    [join(w.home, '.omp', 'agent', 'extensions'), 'theirs.ts'],
    [join(w.project, '.omp', 'extensions'), 'team.ts'],
  ] as const) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, name), `// ${name}: not ours\nexport default () => {};\n`);
  }
  const config = join(w.home, '.config', 'mail4agent');
  const credentials = join(config, 'credentials.json');
  const state = join(config, 'setup-state.json');
  // The credentials and the setup state (and the folders holding them) are setup's to keep.
  const kept = [credentials, state, config, join(w.home, '.config')];
  const tree = (): Record<string, string> => Object.fromEntries(Object.entries(snapshotTree([w.home, w.project])).filter(([p]) => !kept.includes(p)));
  const before = tree();
  const live = join(realpathSync(join(DIST_MAIN, '..')), 'extension', 'live-mail.js');
  // Per program and scope: the extension stub, and the agent guide as a skill.
  const runs: [string, string[], string, string][] = [];
  for (const program of ['pi', 'omp'] as const) {
    const user = join(w.home, `.${program}`, 'agent');
    const project = join(w.project, `.${program}`);
    runs.push([program, [], join(user, 'extensions', 'mail4agent.ts'), join(user, 'skills', 'mail4agent', 'SKILL.md')]);
    runs.push([program, ['--project', w.project], join(project, 'extensions', 'mail4agent.ts'), join(project, 'skills', 'mail4agent', 'SKILL.md')]);
  }
  const each = (file: string, skill: string, action: string) => [
    { path: file, action },
    { path: skill, action },
  ];
  for (const [program, scope, file, skill] of runs) {
    const first = JSON.parse(await w.m4a(['setup', program, ...scope, '--json']));
    assert.deepEqual(first.files, each(file, skill, 'created'), `${program} ${scope.join(' ')}`);
    assert.match(readFileSync(skill, 'utf8'), /^---\nname: mail4agent\n/);
    const stub = readFileSync(file, 'utf8');
    assert.ok(stub.includes(`import { mail4agent } from ${JSON.stringify(live)};`), stub);
    assert.ok(stub.includes(`mail4agent({ account: ${JSON.stringify(program)} })`), stub);
    const [treeOnce, stateOnce] = [tree(), readFileSync(state, 'utf8')];
    const again = JSON.parse(await w.m4a(['setup', program, ...scope, '--json']));
    assert.deepEqual(again.files, each(file, skill, 'unchanged'), `second setup ${program} ${scope.join(' ')}`);
    assert.equal(again.account_created, false);
    assert.equal(again.secret_rotated, false);
    assert.deepEqual(tree(), treeOnce, 'the second setup changed no file');
    assert.equal(readFileSync(state, 'utf8'), stateOnce, 'the second setup left the setup state as it was');
  }
  const secrets = Object.values(JSON.parse(readFileSync(credentials, 'utf8')).accounts as Record<string, { secret: string }>).map((a) => a.secret);
  assert.deepEqual(Object.keys(JSON.parse(readFileSync(credentials, 'utf8')).accounts).sort(), ['omp', 'pi']);
  for (const f of filesUnder([w.home, w.project]).filter((f) => f !== credentials)) {
    const text = readFileSync(f, 'utf8');
    for (const s of secrets) assert.ok(!text.includes(s), `a secret is in ${f}`);
  }
  for (const [program, scope, file, skill] of runs) {
    const gone = JSON.parse(await w.m4a(['unsetup', program, ...scope, '--json']));
    assert.deepEqual(gone.files, each(file, skill, 'removed'), `unsetup ${program} ${scope.join(' ')}`);
  }
  assert.deepEqual(tree(), before, 'unsetup left HOME and the project as they were, byte for byte');
});
