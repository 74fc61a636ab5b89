// Pure parts of the attest layer: /proc/net encodings, argv reading, provider facts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { endianness, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { cleanValue, nodeScriptIndex } from '../src/attest/cmdline.js';
import { ENV_NAMES, argvFacts, envFacts, providerFromPaths } from '../src/attest/corroborate.js';
import { AGENT_SESSION_VARS } from '../src/wire/inherited-env.js';
import { NetTable, findRows } from '../src/attest/net-table.js';
import { clientRowKeys, encodings, findRow, isLoopback } from '../src/attest/proc-net.js';
import { isInitLike, isRunner } from '../src/attest/transparent.js';

const le = { skip: endianness() !== 'LE' && 'encodings below are little-endian' };

test('isLoopback', () => {
  for (const a of ['127.0.0.1', '127.9.8.7', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '0:0:0:0:0:0:0:1']) {
    assert.equal(isLoopback(a), true, a);
  }
  for (const a of ['10.0.0.1', '128.0.0.1', '::', '::2', '::ffff:10.0.0.1', 'fe80::1', 'localhost', '']) {
    assert.equal(isLoopback(a), false, a);
  }
});

test('encodings as the kernel prints them', le, () => {
  assert.deepEqual(encodings('127.0.0.1'), { tcp: '0100007F', tcp6: '0000000000000000FFFF00000100007F' });
  assert.deepEqual(encodings('::ffff:127.0.0.1'), encodings('127.0.0.1'));
  assert.deepEqual(encodings('::1'), { tcp6: '00000000000000000000000001000000' });
});

test('clientRowKeys swaps the ends: the client local pair is the daemon remote pair', le, () => {
  const k = clientRowKeys({ localAddress: '127.0.0.1', localPort: 8080, remoteAddress: '127.0.0.1', remotePort: 40000 });
  assert.equal(k.tcp, '0100007F:9C40 0100007F:1F90');
  const k6 = clientRowKeys({ localAddress: '::1', localPort: 1, remoteAddress: '::1', remotePort: 2 });
  assert.equal(k6.tcp, undefined);
  assert.equal(k6.tcp6, '00000000000000000000000001000000:0002 00000000000000000000000001000000:0001');
});

test('findRow: exact columns, inode, closed rows', () => {
  const table = [
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0',
    '   1: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0 20 4 30 10 -1',
    '   2: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0 20 4 30 10 -1',
    '   3: 0100007F:9C41 0100007F:1F90 06 00000000:00000000 03:00000F5F 00000000     0        0 0 3 0',
    '',
  ].join('\n');
  assert.deepEqual(findRow(table, '0100007F:9C40 0100007F:1F90'), { inode: '333' });
  assert.equal(findRow(table, '0100007F:9C41 0100007F:1F90'), 'closed');
  assert.equal(findRow(table, '0100007F:9C42 0100007F:1F90'), null);
  // Many keys: the one-pass lookup over the bytes must agree with the string search.
  const keys = ['0100007F:9C40 0100007F:1F90', '0100007F:9C41 0100007F:1F90', '0100007F:9C42 0100007F:1F90', '0100007F:1F90 0100007F:9C40', '0100007F:1F90 00000000:0000'];
  const found = findRows(Buffer.from(table, 'latin1'), keys);
  for (const k of keys) assert.deepEqual(found.get(k) ?? null, findRow(table, k), k);
});

test('findRows: a live row after an orphaned one of the same tuple, keys in the wrong column, no final newline', () => {
  const row = (sl: number, pair: string, inode: string) => `${String(sl).padStart(4)}: ${pair} 01 00000000:00000000 00:00000000 00000000     0        0 ${inode} 1 0 20 4 30 10 -1`;
  const a = '0100007F:9C40 0100007F:1F90';
  const b = '0100007F:9C41 0100007F:1F90';
  const c = '0100007F:9C42 0100007F:1F90';
  const lines = [
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    row(0, a, '0'),
    row(1, a, '444'),
    row(2, '0100007F:1F90 0100007F:9C41', '555'), // b's ends swapped: the daemon's own socket
    `   3: 0100007F:AAAA ${b} 01 00000000:00000000 00:00000000 00000000     0        0 666 1`, // b as the remote column
    row(10000, c, '777'), // five-digit sl
  ];
  const t = lines.join('\n'); // no newline after the last row
  const found = findRows(Buffer.from(t, 'latin1'), [a, b, c]);
  assert.deepEqual(found.get(a), { inode: '444' });
  assert.equal(found.get(b), undefined);
  assert.deepEqual(found.get(c), { inode: '777' });
  for (const k of [a, b, c]) assert.deepEqual(found.get(k) ?? null, findRow(t, k), k);
  // A row cut short (no inode field) is not a row.
  assert.equal(findRows(Buffer.from(`   0: ${a} 01 00000000:00000000`, 'latin1'), [a]).get(a), undefined);
});

test('findRows over a table of 20,000 rows agrees with the string search', () => {
  const hex = (n: number, w: number) => n.toString(16).toUpperCase().padStart(w, '0');
  const rows: string[] = ['  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode'];
  for (let i = 0; i < 10_000; i++) {
    const client = `0100007F:${hex(20_000 + i, 4)}`;
    const server = '0100007F:1F90';
    rows.push(
      `${String(2 * i).padStart(4)}: ${client} ${server} 01 00000000:00000000 00:00000000 00000000     0        0 ${i % 97 === 0 ? 0 : 100_000 + i} 1 0 20 4 30 10 -1`.padEnd(149),
    );
    rows.push(`${String(2 * i + 1).padStart(4)}: ${server} ${client} 01 00000000:00000000 00:00000000 00000000     0        0 ${200_000 + i} 1 0 20 4 30 10 -1`.padEnd(149));
  }
  const t = `${rows.join('\n')}\n`;
  const keys = [0, 1, 97, 4_321, 9_999, 10_500].map((i) => `0100007F:${hex(20_000 + i, 4)} 0100007F:1F90`);
  const found = findRows(Buffer.from(t, 'latin1'), keys);
  for (const k of keys) assert.deepEqual(found.get(k) ?? null, findRow(t, k), k);
  assert.deepEqual(found.get(keys[1] as string), { inode: '100001' });
  assert.equal(found.get(keys[0] as string), 'closed');
  assert.equal(found.get(keys[5] as string), undefined);
});

test('nodeScriptIndex skips node options and their values', () => {
  assert.equal(nodeScriptIndex(['node', 'a.js', 'x']), 1);
  assert.equal(nodeScriptIndex(['node', '--import', 'tsx', '-r', 'x', '--loader', 'l', 'src/cli/main.ts']), 7);
  assert.equal(nodeScriptIndex(['node', '--experimental-loader', 'l', '--input-type', 'module', 'm.js']), 5);
  assert.equal(nodeScriptIndex(['node', '--import=tsx', '--enable-source-maps', 'm.js']), 3);
  assert.equal(nodeScriptIndex(['node', '--', 'm.js']), 2);
  assert.equal(nodeScriptIndex(['node', '-e', 'code', 'x.js']), -1);
  assert.equal(nodeScriptIndex(['node']), -1);
});

test('package runners count only when they run this package', () => {
  assert.equal(isRunner('node', ['node', '/usr/lib/node_modules/npm/bin/npx-cli.js', 'm4a', 'send']), true);
  assert.equal(isRunner('node', ['node', '/x/npm/bin/npm-cli.js', 'exec', 'mail4agent@0.1.0']), true);
  assert.equal(isRunner('node', ['node', '/x/pnpm/bin/pnpm.cjs', 'dlx', 'mail4agent']), true);
  assert.equal(isRunner('node', ['node', '/x/npm/bin/npx-cli.js', 'prettier']), false);
  assert.equal(isRunner('node', ['node', '/x/other.js', 'm4a']), false);
  assert.equal(isRunner('bun', ['bunx', 'm4a']), true);
  assert.equal(isRunner('bun', ['bun', 'x', 'mail4agent']), true);
  assert.equal(isRunner('bun', ['bun', 'run', 'm4a']), false);
  assert.equal(isRunner('deno', ['deno', 'run', 'm4a']), false);
});

test('init-like executables', () => {
  for (const b of ['systemd', 'init', 'tini', 'dumb-init', 'docker-init', 'containerd-shim-runc-v2', 's6-svscan', 'runit']) {
    assert.equal(isInitLike(b), true, b);
  }
  assert.equal(isInitLike('bash'), false);
});

test('provider from executable and script paths', () => {
  assert.equal(providerFromPaths(['/usr/bin/node', 'node', '/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js']), 'claude');
  assert.equal(providerFromPaths(['/home/u/.local/share/claude/versions/2.0.1', 'claude']), 'claude');
  assert.equal(providerFromPaths(['/x/@openai/codex/vendor/codex-x86_64-unknown-linux-musl']), 'codex');
  assert.equal(providerFromPaths(['/usr/bin/node', 'node', '/x/bin/codex.js']), 'codex');
  assert.equal(providerFromPaths(['/usr/bin/node', 'node', '/x/@google/gemini-cli/dist/index.js']), 'gemini');
  assert.equal(providerFromPaths(['/opt/cursor-agent']), 'cursor');
  assert.equal(providerFromPaths(['/usr/local/bin/omp']), 'omp');
  // omp run by the npm `bun` package: the script is Bun's first argument; its path also names pi.
  assert.equal(providerFromPaths(['/x/node_modules/bun/bin/bun.exe', 'bun', '/x/node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js']), 'omp');
  // pi rewrites its command line to `pi`; unrewritten, its script path names the package.
  assert.equal(providerFromPaths(['/usr/bin/node', 'pi']), 'pi');
  assert.equal(providerFromPaths(['/usr/bin/node', 'node', '/x/@mariozechner/pi-coding-agent/dist/cli.js']), 'pi');
  // Qwen Code's innermost relaunch, and its bin name.
  assert.equal(providerFromPaths(['/usr/bin/node', '/usr/bin/node', '/x/node_modules/@qwen-code/qwen-code/cli.js']), 'qwen');
  assert.equal(providerFromPaths(['/usr/bin/node', 'node', '/x/node_modules/.bin/qwen']), 'qwen');
  // opencode's npm package runs a compiled binary named opencode.exe, on Linux too.
  assert.equal(providerFromPaths(['/x/node_modules/opencode-ai/bin/opencode.exe', '/x/node_modules/.bin/opencode']), 'opencode');
  assert.equal(providerFromPaths(['/home/u/.opencode/bin/opencode']), 'opencode');
  // Copilot's native binary (its parent is a node loader of @github/copilot), not the editors' server.
  assert.equal(providerFromPaths(['/x/node_modules/@github/copilot-linux-x64/copilot', '/x/node_modules/@github/copilot-linux-x64/copilot']), 'copilot');
  assert.equal(providerFromPaths(['/usr/bin/node', 'node', '/x/node_modules/@github/copilot/npm-loader.js']), 'copilot');
  assert.equal(providerFromPaths(['/usr/bin/node', 'node', '/x/node_modules/@github/copilot-language-server/dist/language-server.js']), undefined);
  assert.equal(providerFromPaths(['/usr/bin/node', 'node', '/x/pip/main.js']), undefined);
  assert.equal(providerFromPaths(['/usr/bin/node', 'node', '/tmp/test.js']), undefined);
});

test('argv facts: model and provider session id', () => {
  assert.deepEqual(argvFacts('claude', ['--model', 'opus', '--resume', 'abc-1']), { model: 'opus', provider_session_id: 'abc-1' });
  assert.deepEqual(argvFacts('claude', ['--model=opus', '-r', 'x1']), { model: 'opus', provider_session_id: 'x1' });
  assert.deepEqual(argvFacts('claude', ['--session-id=s9']), { provider_session_id: 's9' });
  assert.deepEqual(argvFacts('claude', ['--resume', '--model', 'm']), { model: 'm' });
  assert.deepEqual(argvFacts('claude', ['-m', 'x']), {}, '-m is codex only');
  const id = '0199a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b';
  assert.deepEqual(argvFacts('codex', ['-m', 'gpt-5', 'resume', id]), { model: 'gpt-5', provider_session_id: id });
  assert.deepEqual(argvFacts('codex', ['resume', '--last']), {});
  assert.deepEqual(argvFacts('codex', ['resume', 'fix the bug']), {});
  // Gemini: `--resume UUID` (or `--session-id UUID`) names it; `latest` and an index do not.
  const g = '53dddd9d-c249-453a-a7c7-83f005431f1d';
  assert.deepEqual(argvFacts('gemini', ['-p', 'hi', '--yolo', '-m', 'gemini-2.5-flash', '--resume', g]), { model: 'gemini-2.5-flash', provider_session_id: g });
  assert.deepEqual(argvFacts('gemini', ['--resume', 'latest']), {});
  assert.deepEqual(argvFacts('gemini', ['-r', '5']), {});
  assert.deepEqual(argvFacts('gemini', ['--session-id', g]), { provider_session_id: g });
  assert.deepEqual(argvFacts('qwen', ['-r', g, '-m', 'qwen3-coder']), { model: 'qwen3-coder', provider_session_id: g });
  assert.deepEqual(argvFacts('qwen', ['--continue']), {});
  // Copilot: a name or an id prefix is no id; only the = form or a whole UUID.
  assert.deepEqual(argvFacts('copilot', [`--resume=${g}`, '--allow-all-tools']), { provider_session_id: g });
  assert.deepEqual(argvFacts('copilot', ['--resume=my feature']), {});
  assert.deepEqual(argvFacts('copilot', ['--resume', '0cb916d']), {});
  assert.deepEqual(argvFacts('copilot', ['-m', 'x']), {}, "copilot's -m is not --model");
  assert.deepEqual(argvFacts('opencode', ['run', '-s', 'ses_2f1a9c', '-m', 'fake/scripted', 'go on']), { model: 'fake/scripted', provider_session_id: 'ses_2f1a9c' });
  assert.deepEqual(argvFacts('opencode', ['--session=ses_x1']), { provider_session_id: 'ses_x1' });
  assert.deepEqual(argvFacts('opencode', ['-c']), {});
});

test('env facts: nearest helper wins, inherited or contradicting values are skipped', () => {
  const none = new Map<string, string>();
  const h = (o: Record<string, string>) => new Map(Object.entries(o));
  assert.deepEqual(envFacts([h({ CLAUDE_CODE_SESSION_ID: 'a' })], none, undefined), { provider: 'claude', id: 'a' });
  assert.deepEqual(envFacts([h({ CODEX_THREAD_ID: 't' }), h({ CLAUDE_CODE_SESSION_ID: 'a' })], none, undefined), { provider: 'codex', id: 't' });
  // The session itself carries the outer agent's id: inherited, not this session's.
  assert.equal(envFacts([h({ CLAUDE_CODE_SESSION_ID: 'a' })], h({ CLAUDE_CODE_SESSION_ID: 'a' }), undefined), undefined);
  // A codex session under an outer claude: the claude id is not codex's.
  assert.deepEqual(envFacts([h({ CLAUDE_CODE_SESSION_ID: 'a', CODEX_THREAD_ID: 't' })], none, 'codex'), { provider: 'codex', id: 't' });
  assert.equal(envFacts([h({ GEMINI_SESSION_ID: 'g' })], none, 'claude'), undefined);
  assert.deepEqual(envFacts([h({ QWEN_CODE_SESSION_ID: 'q' })], none, 'qwen'), { provider: 'qwen', id: 'q' });
  assert.deepEqual(envFacts([h({ COPILOT_CLI: '1', COPILOT_AGENT_SESSION_ID: 'c' })], none, 'copilot'), { provider: 'copilot', id: 'c' });
  // opencode names its session by its plugin, never by a variable: an inherited id is an outer agent's.
  assert.equal(envFacts([h({ QWEN_CODE_SESSION_ID: 'q' })], none, 'opencode'), undefined);
});

test('the variables attestation reads are the ones no child of mail4agent inherits', () => {
  assert.deepEqual([...ENV_NAMES].sort(), [...AGENT_SESSION_VARS].sort());
});

test('cleanValue drops control characters and caps bytes without splitting a character', () => {
  assert.equal(cleanValue('a\u0000b\nc\u001b[0m\u007f'), 'abc[0m');
  assert.equal(cleanValue('x'.repeat(300)).length, 256);
  const capped = cleanValue('é'.repeat(200)); // 2 bytes each
  assert.equal(Buffer.byteLength(capped), 256);
  assert.equal(cleanValue('ab€', 4), 'ab'); // € is 3 bytes
});

test('NetTable reads a whole file into its buffer, grows for a large one and gives the room back after', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'm4a-net-table-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const small = join(dir, 'small');
  const large = join(dir, 'large');
  writeFileSync(small, 'row 1\nrow 2\n');
  const big = Buffer.alloc(5 << 20, 'x');
  big.write('end', big.length - 3);
  writeFileSync(large, big);
  const table = new NetTable(16);
  assert.equal(table.read(join(dir, 'missing')), false);
  assert.equal(table.length, 0);
  assert.equal(table.read(small), true);
  assert.equal(table.bytes.toString('latin1'), 'row 1\nrow 2\n');
  assert.equal(table.read(large), true);
  assert.equal(table.length, big.length);
  assert.ok(table.bytes.equals(big));
  assert.ok(table.capacity >= 5 << 20);
  assert.equal(table.read(small), true);
  assert.equal(table.bytes.toString('latin1'), 'row 1\nrow 2\n');
  assert.ok(table.capacity <= 1 << 20, `kept ${table.capacity} bytes`);
});
