// The printed form of a session address (engine/short-address.ts) against a real memory store:
// slug, else alias, else the shortest unique id prefix of at least 8 hex digits; each form names
// exactly its session when written back, an ambiguous prefix is refused by name, and a page pays
// one lookup per distinct address.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createMemoryStore } from '../src/store/memory/memory-store.js';
import type { Store, StoredMessage } from '../src/store/types.js';
import { ShortAddresses } from '../src/engine/short-address.js';
import { findSession } from '../src/engine/names.js';
import { systemClock } from '../src/engine/clock.js';
import { MailError } from '../src/wire/errors.js';

const hex = (head: string): string => `s-${head}${'0'.repeat(64 - head.length)}`;

async function world(): Promise<{ store: Store; reads: () => number; printer: ShortAddresses }> {
  const store = createMemoryStore();
  let n = 0;
  const counted = new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (prop === 'findSessionsByPrefix' || prop === 'namesOf' || prop === 'getSession') n++;
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const reg = (id: string, slugBase: string | null) =>
    store.registerSession({ account: 'claude', id, hostId: 'h', pid: 1, startTime: 1, exe: '/x', uid: 0, corroborated: {}, createdAt: 0, predecessor: null, slugBase });
  await reg(hex('aaaa1111'), 'web-ui');
  await reg(hex('bbbb2222'), null);
  await reg(hex('cccc3333'), null);
  await store.addAlias('claude', hex('cccc3333'), '@lead');
  // Two sessions that share their first 8 hex digits.
  await reg(hex('dddd4444a'), null);
  await reg(hex('dddd4444b'), null);
  return { store, reads: () => n, printer: new ShortAddresses(counted, systemClock, 24 * 3600_000) };
}

const live = (): boolean => true;

describe('printed session addresses', () => {
  it('slug, else alias, else the shortest unique prefix; accounts and rooms as they are', async () => {
    const { printer } = await world();
    assert.equal(await printer.print(`claude/${hex('aaaa1111')}`), 'claude/web-ui');
    assert.equal(await printer.print(`claude/${hex('cccc3333')}`), 'claude/@lead');
    assert.equal(await printer.print(`claude/${hex('bbbb2222')}`), 'claude/s-bbbb2222');
    assert.equal(await printer.print(`claude/${hex('dddd4444a')}`), 'claude/s-dddd4444a');
    assert.equal(await printer.print(`claude/${hex('dddd4444b')}`), 'claude/s-dddd4444b');
    assert.equal(await printer.print(`claude/${hex('eeee5555')}`), 'claude/s-eeee5555', 'a session gone from the directory: its prefix');
    assert.equal(await printer.print('claude'), 'claude');
    assert.equal(await printer.print('#reviewers'), '#reviewers');
  });

  it('every printed form names exactly its session; an ambiguous prefix is refused, never guessed', async () => {
    const { store, printer } = await world();
    for (const id of [hex('aaaa1111'), hex('bbbb2222'), hex('cccc3333'), hex('dddd4444a'), hex('dddd4444b')]) {
      const printed = await printer.print(`claude/${id}`);
      const s = await findSession(store, 'claude', printed.slice('claude/'.length), live);
      assert.equal(s.id, id, printed);
    }
    const e = await findSession(store, 'claude', 's-dddd4444', live).then(
      () => assert.fail('an ambiguous prefix resolved'),
      (x: unknown) => x,
    );
    assert.ok(e instanceof MailError && e.code === 'unknown_session', String(e));
    assert.equal((e.details.candidates as string[]).length, 2, JSON.stringify(e.details));
  });

  it('one lookup per distinct address, shared by readers asking at once; a name change is seen after clear()', async () => {
    const { store, reads, printer } = await world();
    const a = `claude/${hex('aaaa1111')}`;
    const b = `claude/${hex('bbbb2222')}`;
    const forms = await printer.printAll([a, b, a, a, b, 'codex', '#r']);
    assert.deepEqual([...forms.values()], ['claude/web-ui', 'claude/s-bbbb2222', 'codex', '#r']);
    const first = reads();
    assert.ok(first <= 4, `at most two reads per distinct session (prefix, names): ${first}`);
    await Promise.all(Array.from({ length: 100 }, () => printer.printAll([a, b])));
    assert.equal(reads(), first, 'a hundred readers at once cost no further read');
    await store.addAlias('claude', hex('bbbb2222'), '@fresh');
    printer.clear();
    assert.equal(await printer.print(b), 'claude/@fresh');
    assert.equal(await printer.print(a, [await store.getSession('claude', hex('aaaa1111'))]), 'claude/web-ui');
  });

  it('a page of 200 messages pays one lookup per distinct session, not one per message', async () => {
    const { reads, printer } = await world();
    const msg = (session: string | null, to: string) => ({ fromAccount: 'claude', fromSession: session, toAddress: to }) as unknown as StoredMessage;
    const page = Array.from({ length: 200 }, (_, i) => msg(i % 2 ? hex('aaaa1111') : hex('bbbb2222'), i % 3 ? 'codex' : `claude/${hex('cccc3333')}`));
    page.push(msg(null, '#reviewers'));
    const printed = await printer.forMessages(page);
    assert.ok(reads() <= 6, `three distinct sessions, at most two reads each: ${reads()}`);
    assert.deepEqual([printed.from(page[0]!), printed.from(page[1]!), printed.from(page[200]!)], ['claude/s-bbbb2222', 'claude/web-ui', 'claude']);
    assert.deepEqual([printed.to(page[0]!), printed.to(page[1]!), printed.to(page[200]!)], ['claude/@lead', 'codex', '#reviewers']);
  });
});
