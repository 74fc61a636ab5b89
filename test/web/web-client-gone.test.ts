// A client that goes away in the middle of a browser-door request body is nobody's failure: a
// debug line without a stack, never an error, and nothing stored (the HTTP door does the same).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { recordingLogger, type LogLine } from '../support/recording-logger.js';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { until } from '../support/until.js';
import { assertUnchanged, storeSnapshot } from '../reliability/helpers.js';
import { PASSWORD, createPerson, login } from './web-helpers.js';

describe('browser door: a client gone mid-body', () => {
  const lines: LogLine[] = [];
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon({ log: recordingLogger(lines) });
    await createPerson(d, 'alice');
  });
  after(() => d.stop());

  it('aborting /web/api/login mid-body is a debug line without a stack, and stores nothing', async () => {
    const before = await storeSnapshot(d.store);
    const errorsBefore = lines.filter((l) => l.level === 'error').length;
    for (let i = 0; i < 5; i++) {
      await new Promise<void>((resolve) => {
        const s = connect(d.port, '127.0.0.1', () => {
          s.write(
            `POST /web/api/login HTTP/1.1\r\nhost: 127.0.0.1:${d.port}\r\norigin: ${d.url}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"account":"alice","password":"${PASSWORD.slice(0, 5)}`,
          );
          setTimeout(() => s.destroy(), 50);
        });
        s.on('close', () => resolve());
        s.on('error', () => undefined);
      });
    }
    const gone = () => lines.filter((l) => l.msg === 'client closed the connection mid-request' && (l.obj as { path?: string }).path === '/web/api/login');
    await until('five debug lines', () => gone().length >= 5, 5_000);
    assert.ok(gone().every((l) => l.level === 'debug'));
    assert.equal(lines.filter((l) => l.level === 'error').length, errorsBefore, 'no error-level line');
    for (const l of lines.filter((x) => x.level === 'debug')) assert.ok(!JSON.stringify(l.obj).includes('    at '), 'no stack');
    await assertUnchanged(d.store, before, 'an aborted login stores nothing');
    await login(d.url, 'alice');
  });
});
