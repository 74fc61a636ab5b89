// Writes docs/protocol.md from the code: the operation table (routes, tools, zod schemas), the error
// table, the limits and the wait caps. Prose lives here as template text.
//   npx tsx scripts/gen-protocol-doc.ts            write docs/protocol.md
//   npx tsx scripts/gen-protocol-doc.ts --check    exit 1 when docs/protocol.md is stale
//   --file PATH                                    another target (for tests)
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import { jsonSchemaOf } from '../src/wire/json-schema.js';
import { OPERATIONS, OPERATION_NAMES, webPathOf, type OperationName, type OperationSpec } from '../src/wire/operations.js';
import { MCP_PROTOCOL_VERSIONS as PROTOCOL_VERSIONS } from '../src/wire/capabilities.js';
import { ERROR_TABLE, type ErrorCode, type McpForm } from '../src/wire/errors.js';
import { LIMITS } from '../src/wire/limits.js';
import { STREAM_LIMITS } from '../src/wire/stream.js';
import { DEFAULT_WAIT_CAPS } from '../src/engine/waits.js';

type Json = Record<string, unknown>;
const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const DEFAULT_TARGET = resolve(ROOT, 'docs/protocol.md');

// ---------------------------------------------------------------- JSON Schema → Markdown

/** JSON with every node on one line when it fits in `width` columns (`lead`: columns before it). */
function compactJson(v: unknown, indent = '', lead = 0, width = 100): string {
  const flat = JSON.stringify(v);
  if (v === null || typeof v !== 'object' || indent.length + lead + flat.length <= width) return flat;
  const inner = `${indent}  `;
  if (Array.isArray(v)) return `[\n${v.map((x) => inner + compactJson(x, inner, 0, width)).join(',\n')}\n${indent}]`;
  const lines = Object.entries(v).map(([k, x]) => {
    const key = `${JSON.stringify(k)}: `;
    return inner + key + compactJson(x, inner, key.length, width);
  });
  return `{\n${lines.join(',\n')}\n${indent}}`;
}

const cell = (s: string): string => s.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
const code = (s: string): string => `\`${s}\``;

function typeOf(s: Json, inline = false): string {
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return s.enum.map((x) => JSON.stringify(x)).join(' | ');
  const alts = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (alts) return alts.map((a) => typeOf(a, true)).join(' | ');
  if (Array.isArray(s.type)) return s.type.join(' | ');
  switch (s.type) {
    case 'object': {
      const props = Object.entries((s.properties ?? {}) as Record<string, Json>);
      if (!inline || props.length === 0) return 'object';
      const req = new Set((s.required ?? []) as string[]);
      return `{${props.map(([k, p]) => (p.const !== undefined ? `${k}: ${JSON.stringify(p.const)}` : `${k}${req.has(k) ? '' : '?'}`)).join(', ')}}`;
    }
    case 'array': {
      const t = typeOf((s.items ?? {}) as Json);
      return t.includes(' | ') ? `(${t})[]` : `${t}[]`;
    }
    case undefined:
      return 'any';
    default:
      return String(s.type);
  }
}

function notesOf(s: Json): string {
  const n: string[] = [];
  if (typeof s.description === 'string') n.push(s.description);
  if (typeof s.pattern === 'string') n.push(`pattern ${code(s.pattern)}`);
  if (typeof s.maxLength === 'number') n.push(`at most ${s.maxLength} characters`);
  if (typeof s.minimum === 'number') n.push(`≥ ${s.minimum}`);
  if (typeof s.maximum === 'number') n.push(`≤ ${s.maximum}`);
  if (typeof s.minItems === 'number') n.push(`at least ${s.minItems} item${s.minItems === 1 ? '' : 's'}`);
  if (typeof s.maxItems === 'number') n.push(`at most ${s.maxItems} items`);
  const items = s.items as Json | undefined;
  if (items && typeof items.pattern === 'string') n.push(`each: pattern ${code(items.pattern)}`);
  return n.join('; ');
}

interface Row {
  field: string;
  type: string;
  required: boolean;
  notes: string;
}

/** The object a property continues into (for dotted child rows), if any. */
function nestedObject(s: Json): { schema: Json; suffix: string } | null {
  const isObj = (x: Json | undefined): boolean => !!x && x.type === 'object' && !!x.properties;
  if (isObj(s)) return { schema: s, suffix: '.' };
  const items = s.items as Json | undefined;
  if (s.type === 'array' && items && isObj(items)) return { schema: items, suffix: '[].' };
  const alts = s.anyOf as Json[] | undefined;
  if (alts && alts.length === 2 && alts.some((a) => a.type === 'null')) {
    const obj = alts.find((a) => a.type !== 'null');
    if (obj && isObj(obj)) return { schema: obj, suffix: '.' };
  }
  return null;
}

function rowsOf(s: Json, prefix = '', out: Row[] = []): Row[] {
  const req = new Set((s.required ?? []) as string[]);
  for (const [k, p] of Object.entries((s.properties ?? {}) as Record<string, Json>)) {
    out.push({ field: prefix + k, type: typeOf(p), required: req.has(k), notes: notesOf(p) });
    const nested = nestedObject(p);
    if (nested) rowsOf(nested.schema, prefix + k + nested.suffix, out);
  }
  return out;
}

function schemaSection(title: string, schema: z.ZodType, io: 'input' | 'output'): string {
  const js = jsonSchemaOf(schema, io);
  const rows = rowsOf(js);
  const table = rows.length
    ? [
        '| field | type | required | notes |',
        '|---|---|---|---|',
        ...rows.map((r) => `| ${code(r.field)} | ${cell(code(r.type))} | ${r.required ? 'yes' : ''} | ${cell(r.notes)} |`),
      ].join('\n')
    : '_No fields: send `{}`._';
  const strict = js.additionalProperties === false && io === 'input' ? ' Unknown fields are refused (`malformed`).' : '';
  return [`**${title}.**${strict}`, '', table, '', '<details><summary>JSON Schema</summary>', '', '```json', compactJson(js), '```', '', '</details>'].join('\n');
}

// ---------------------------------------------------------------- sections

/** Hand-written remarks per mail op that JSON Schema cannot say. */
const OP_NOTES: Record<string, string> = {
  send: 'There is no `from` field: the sender is your attested session, and a `from` field is refused as `malformed {field: "from"}`. Where the message lands is decided by `to` (see the semantics table); `reply_to` only threads it.',
  inbox: `\`next_cursor\` is opaque: pass it back as \`after\`. \`wait_secs\` is clamped to ${LIMITS.waitSecsHttp} s over HTTP and ${LIMITS.waitSecsMcp} s over MCP, never refused. Over MCP the page is cut to the byte budget (see the MCP door).`,
  ack: `Give exactly one of \`message_id\` or \`message_ids\` (at most ${LIMITS.ackIdsMax}). Every id is checked before any is acknowledged: a refused request changes nothing. Acknowledging twice is harmless.`,
  get: 'You may fetch mail readable by you and mail your account sent. With `thread: true`, `thread` holds the part of the thread you may read.',
  status: 'Needs an attested session. An omitted field is kept; an empty string clears it.',
  directory:
    'By default only live sessions, each as its address and what it declared; `include_ended: true` adds the ended ones (`ended: true`), `detail: true` gives every session in full (session id, slug, aliases, last seen, successor, card). The directory never contains a secret or a secret digest.',
  reply:
    "The reply goes to the message's sender (the session that wrote it, or its account; an ended session is redirected exactly as a send with `reply_to` would be), for room mail to the room unless `to_sender: true`; a reply to mail your own account sent goes to its recipient. Mail from an account that was removed is not answered to a new account of its name: `unknown_participant`. The subject is the original's with `Re: ` once; `reply_to` is set. The original is acknowledged after the reply is stored unless `ack: false` (`acked` says whether it was).",
};

/** The operations of one group, in table order. */
const namesWhere = (f: (o: OperationSpec) => boolean): OperationName[] => OPERATION_NAMES.filter((n) => f(OPERATIONS[n]));
const MAIL = namesWhere((o) => o.tool !== undefined);
const HOOKS = namesWhere((o) => o.tool === undefined && o.callers.includes('agent'));
const ADMIN = namesWhere((o) => o.callers.includes('operator') || o.callers.includes('local'));
const BROWSER = namesWhere((o) => o.callers.length === 1 && o.callers[0] === 'person');

/** Who may call, whether it only reads, whether a retry is safe: from the table. */
function factsLine(n: OperationName): string {
  const o = OPERATIONS[n];
  const web = webPathOf(n);
  const who = o.callers.map(
    (c) => ({ agent: 'agents', person: `persons in the browser (\`POST ${web ?? ''}\`)`, operator: 'the operator', local: 'the operator on this machine' })[c],
  );
  return `- ${o.readOnly ? 'Reads only' : 'Changes the mailbox'}; ${o.retrySafe ? 'safe to retry' : 'not safe to retry blindly (use an idempotency key where it has one)'}; for ${who.join(', ')}.`;
}

function mailOpSection(n: OperationName): string {
  const o = OPERATIONS[n];
  const note = OP_NOTES[n];
  return [
    `### ${n}`,
    '',
    `- HTTP: \`POST ${o.path}\``,
    o.tool ? `- MCP tool: \`${o.tool}\`` : '- HTTP only (for the hooks agent programs run; not an MCP tool)',
    factsLine(n),
    '',
    o.summary,
    ...(note ? ['', note] : []),
    '',
    schemaSection('Request', o.input, 'input'),
    ...(o.mcpInput ? ['', schemaSection("Request over MCP (the tool's schema)", o.mcpInput, 'input')] : []),
    '',
    schemaSection('Response', o.output, 'output'),
  ].join('\n');
}

function browserSection(): string {
  return [
    '## Browser operations',
    '',
    'For a person logged in to the browser door (docs/web.md): a login cookie and the CSRF header, never a bearer. The mail and operator operations marked "persons in the browser" above are served there too, at the path they name.',
    '',
    '| route | summary |',
    '|---|---|',
    ...BROWSER.map((n) => `| \`POST ${OPERATIONS[n].path}\` | ${cell(OPERATIONS[n].summary)} |`),
  ].join('\n');
}

function adminSection(): string {
  const routes = ADMIN.map((n) => OPERATIONS[n]);
  const parts = ADMIN.map((n) => {
    const r = OPERATIONS[n];
    return [`### \`POST ${r.path}\``, '', factsLine(n), '', r.summary, '', schemaSection('Request', r.input, 'input'), '', schemaSection('Response', r.output, 'output')].join(
      '\n',
    );
  });
  return [
    '## Operator routes',
    '',
    'HTTP only (there are no MCP tools for them). The bearer must be an account with the `operator` permission, otherwise `permission_denied {need: "operator"}`; where attestation exists the calling process must also be attested. Every route is `POST` with a JSON body. `/admin/wake/*` (delivery chains run programs) is also refused to any peer not on this machine: `permission_denied {need: "local"}`.',
    '',
    '| route | summary |',
    '|---|---|',
    ...routes.map((r) => `| \`POST ${r.path}\` | ${cell(r.summary)} |`),
    '',
    ...parts.flatMap((p) => [p, '']),
  ].join('\n');
}

const MCP_FORM: Record<McpForm, string> = {
  http: 'HTTP status, before JSON-RPC is read',
  tool_error: 'tool result with `isError: true`',
};

function errorSection(): string {
  const rows = (Object.entries(ERROR_TABLE) as [ErrorCode, (typeof ERROR_TABLE)[ErrorCode]][]).map(
    ([c, spec]) => `| \`${c}\` | ${spec.http} | ${MCP_FORM[spec.mcp]} | ${cell(spec.meaning.replace(/\{([^}]*)\}/g, (m) => code(m)))} |`,
  );
  return [
    '## Errors',
    '',
    'Every refusal on every door is one envelope. The fields in braces travel beside `code` and `message`:',
    '',
    '```json',
    '{"error":{"code":"too_large","message":"subject is over its limit of 512","field":"subject","limit":512,"actual":513}}',
    '```',
    '',
    '| code | HTTP | over MCP | meaning |',
    '|---|---|---|---|',
    ...rows,
    '',
    'A `401` carries `WWW-Authenticate: Bearer`; a `429` carries `Retry-After`; a `405` on `/mcp` or an operation route carries `Allow: POST`. An unknown failure is a `500` `internal` that returns nothing about its cause.',
  ].join('\n');
}

/** Meanings of the limits; a limit missing here is still listed. */
const LIMIT_NOTES: Partial<Record<keyof typeof LIMITS, string>> = {
  selectorBytes: 'account id, session id, room name, idempotency key, ref kind',
  subjectBytes: '`subject`',
  bodyBytes: '`body`',
  correlationBytes: '`correlation`',
  refsCount: 'entries in `refs`',
  refLocatorBytes: '`refs[].locator`',
  refDigestBytes: '`refs[].digest`',
  inboxLimitDefault: '`limit` of an inbox page when omitted',
  inboxLimitMax: 'largest `limit` of an inbox page',
  ackIdsMax: 'ids in one `ack`',
  declaredBytes: '`working_on` in `status`',
  labelBytes: '`role`, `parent`, account `label`',
  urlBytes: 'listener URL',
  requestBodyBytes: 'a request body; refused before parsing as `too_large {field: "(body)"}`',
  waitSecsHttp: 'longest `wait_secs` over HTTP (clamped)',
  waitSecsMcp: 'longest `wait_secs` over MCP (clamped)',
  mcpInboxBudgetBytes: 'JSON size of one MCP inbox page; longer bodies are cut with a marker',
};

function unitOf(key: string): string {
  if (key.endsWith('Bytes')) return 'bytes';
  if (key.startsWith('waitSecs')) return 'seconds';
  return 'count';
}

function limitSection(): string {
  return [
    '## Limits',
    '',
    'At the limit is accepted; one over is refused with `too_large {field, limit, actual}`.',
    '',
    '| limit | value | unit | applies to |',
    '|---|---|---|---|',
    ...Object.entries(LIMITS).map(([k, v]) => `| \`${k}\` | ${v} | ${unitOf(k)} | ${cell(LIMIT_NOTES[k as keyof typeof LIMITS] ?? '')} |`),
    '',
    `Parked waits are capped at ${DEFAULT_WAIT_CAPS.perSession} per session, ${DEFAULT_WAIT_CAPS.perAccount} per account and ${DEFAULT_WAIT_CAPS.total} per daemon.`,
  ].join('\n');
}

const [LATEST] = PROTOCOL_VERSIONS;

function proseTop(): string {
  return `# mail4agent protocol reference

<!-- Generated by scripts/gen-protocol-doc.ts from the operation table, schemas, error table and limits.
     Do not edit by hand: run \`npm run docs:protocol\`. -->

mail4agent is a mailbox daemon for AI agent sessions on one machine. It has two doors onto the
same operations: plain HTTP (\`POST /mail/…\`, \`POST /admin/…\`) and MCP (\`POST /mcp\`).

## Identity and credentials

- Every request carries \`Authorization: Bearer <secret>\`; the secret names an **account**.
- The daemon attests every connection to the OS process behind it (Linux \`/proc\`; the mail CLI is
  transparent, so its agent process counts). That process incarnation is the caller's **session**
  (\`claude/s-…\`); when the agent's own session id can be corroborated, a restarted agent's new
  session succeeds the old one.
- The sender of a message is therefore never a field: it is derived from credential and process.

## Envelope

Successful answers are the response object of the operation, as JSON. Every refusal, on every
door, is one envelope: a snake_case \`code\`, a human \`message\`, and the inputs that explain it
beside them:

\`\`\`json
{"error":{"code":"unknown_participant","message":"no account nobody","participant":"nobody"}}
\`\`\`

In general: \`{"error":{"code":…,"message":…,…inputs}}\`. The full table is under [Errors](#errors).

## Addresses

Exactly three kinds, in a compact string form and a tagged JSON form; \`to\` accepts either.

| kind | compact | tagged JSON | reaches |
|---|---|---|---|
| direct | \`claude\` | \`{"kind":"direct","participant":"claude"}\` | the account \`claude\` |
| session | \`claude/s-…\` | \`{"kind":"session","participant":"claude","session":"s-…"}\` | one session of \`claude\` and its successors |
| room | \`#reviewers\` | \`{"kind":"room","room":"reviewers"}\` | every current member account of the room |

Account ids, session ids and room names are selectors: \`[A-Za-z0-9._@+-]\`, at most
${LIMITS.selectorBytes} bytes, not starting with \`-\` or \`.\`, no \`..\`. Responses always use the compact form.
Each part of a compact address is checked for its length before it is looked up: a \`to\` (or a room,
account or session name) over ${LIMITS.selectorBytes} bytes is \`too_large {field: "to", limit: ${LIMITS.selectorBytes}, actual}\`, never
\`unknown_participant\`.

The session part of an address may also be a friendly name. Each session lineage (a session and its
successors) gets a **slug** on first contact from its working directory's basename (\`web-ui\`, then
\`web-ui-2\` …), and may add **aliases** with \`status {alias}\`; slugs and aliases share one namespace
per account, so a name already taken is refused (\`already_exists\`), never shared, and aliases pass to a
successor. A **unique id prefix** of at least 6 hex digits (with or without \`s-\`) works too. Resolution
order: exact id, alias, slug, prefix. An ambiguous or unknown name is \`unknown_session\` with
\`candidates\`; nothing is delivered to a mailbox that does not exist. The only broadcast is a room the
operator creates with \`everyone\` (\`m4a admin room add all --everyone\`): every account, present and
future, is a member.

## Semantics

| question | case | rule |
|---|---|---|
| Who reads it | mail to an account (\`claude\`) | every session of that account |
| Who reads it | mail to a session (\`claude/s-…\`) | only that session and its successors |
| Who reads it | mail to a room (\`#room\`) | every session of every current member account, the room's whole history (also mail sent before the account joined) |
| Who reads it | former members of a room | none of it: revoking a membership takes the room's history away |
| Who acknowledges for whom | account mail and room mail | acknowledged once for the whole account, like a shared queue: when one session acks it, it stops showing for every session of the account |
| Who acknowledges for whom | session mail | that session (its successors see the acknowledgement) |
| When a wait parks | \`inbox\` with \`wait_secs\` > 0 and \`after\` | only while nothing newer than \`after\` is readable (\`include_acked\` and \`thread_id\` narrow the page as usual) |
| When a wait parks | \`inbox\` with \`wait_secs\` > 0, no \`after\` | unless there is mail this session has not been shown yet: mail shown and not acknowledged does not end a wait, so a reader that never acknowledges does not spin. Shown: returned by an inbox page or a wait, or listed by a hook notice; one mark per session lineage (per account for a caller without a session), the highest message shown, so older mail counts as shown too (a page filtered by \`thread_id\` marks only its thread). A hook's "you have new mail" means the same: mail not shown yet |
| When a wait answers | a wait without \`after\` ends on new mail | the unacknowledged page as usual: the shown mail, then the new; when both do not fit in \`limit\` (or the MCP byte budget) the oldest shown mail makes room, so the new mail is always in the answer (\`next_cursor\` follows its last message) |
| When a wait wakes | mail commits | on the commit of mail readable by the caller; the reader re-queries (a wake is a hint, the query is the truth) and parks again if there is still nothing new |
| When a wait ends | time runs out, the daemon stops, or the client goes away | an empty page with \`next_cursor\`, never an error; \`wait_secs\` is clamped to ${LIMITS.waitSecsMcp} s over MCP and ${LIMITS.waitSecsHttp} s over HTTP. A wait whose client closed its connection is dropped at once and counts against no cap |
| When a wait is capped | too many waits | over ${DEFAULT_WAIT_CAPS.perSession} per session the oldest wait of that session is answered with an empty page; over ${DEFAULT_WAIT_CAPS.perAccount} per account or ${DEFAULT_WAIT_CAPS.total} in total the new wait is refused \`rate_limited {retry_after}\` |
| Where a reply goes | \`reply {message_id}\` (\`m4a_mail_reply\`) | to the message's sender; room mail to the room unless \`to_sender\`; then the rows below apply to that address |
| Where a reply goes | \`send\` with \`reply_to\` | to whatever \`to\` says; \`reply_to\` threads the message, it does not choose the recipient |
| Where a reply goes | \`to\` names a session that ended and has a live successor | to the successor; the send response says so with \`to\` (the successor's address) and \`redirected: true\` |
| Where a reply goes | a reply (\`reply_to\` a message that session sent) to an ended session without a live successor | to its account; the send response has \`to\` = the account and \`redirected: true\` |
| Where a reply goes | any other mail to an ended session without a live successor | refused: \`session_ended {account}\` (write to the account instead) |
| Where a reply goes | an account, session or room that does not exist | refused: \`unknown_participant\`, \`unknown_session\` or \`unknown_room\`; mail is never accepted for nobody |

## HTTP door

- Every operation is \`POST\` with a JSON body (an empty body counts as \`{}\`) and answers JSON.
  Another method on a known route is \`405 method_not_allowed\` with \`Allow: POST\`; an unknown
  path is \`404 unknown_route\`. \`GET /health\` needs no credential.
- \`GET /metrics\` is the Prometheus text format (\`text/plain; version=0.0.4\`), served to loopback
  peers with the operator credential only (\`401 unauthenticated\`, \`403 permission_denied {need}\`),
  never on the browser's LAN listener, and absent (\`404 unknown_route\`) under \`m4a serve --no-metrics\`.
  Every metric is listed in docs/operations.md.
- Every answer on the loopback listener carries \`x-request-id\`: the request's own header when it is a short token
  (\`[A-Za-z0-9._:-]\`, at most 64), else one the daemon made. The daemon's log lines written while
  serving the request carry it as \`req_id\`.
- Bodies over ${LIMITS.requestBodyBytes} bytes are refused before parsing; bodies must be UTF-8 JSON.
- Unknown fields are refused everywhere (\`malformed {field, reason}\`).
- Text that models read cannot fake structure. Single-line text (subjects, labels and display names,
  declared card fields, correlations, ref locators, timer notes, URLs, arguments) refuses,
  by Unicode property, control characters (Cc, with U+0085 NEL), format characters (Cf: the bidi
  controls U+061C, U+200E/U+200F, U+202A–U+202E, U+2066–U+2069, U+200B, U+00AD, U+FEFF, U+0600–U+0605,
  the tag characters U+E0000–U+E007F …), the line and paragraph separators U+2028/U+2029 (Zl, Zp) and
  every default-ignorable character (the variation selectors U+FE00–U+FE0E and U+E0100–U+E01EF, which
  can hide data, U+034F, the Hangul fillers U+115F, U+1160, U+3164, U+FFA0 …):
  \`malformed {field, reason, code_point: "U+2028"}\`. ZWNJ and ZWJ (U+200C/U+200D) and U+FE0F, the
  emoji presentation selector, pass: emoji such as 👩‍💻 and ❤️ and several scripts need them, and
  they neither break a line, reorder text nor hide more than one fixed value. Names
  (account ids, room names, aliases) are selectors, ASCII only. A password is never shown, only
  compared: any well-formed string within its byte limit (a lone surrogate is refused). A body keeps format characters
  (right-to-left writing needs the marks) and refuses controls other than \`\\n\` and \`\\t\`; it is stored
  verbatim. Wherever text is composed for a model (the hooks' wake text, Codex turns, webhook
  payloads, MCP tool results, the CLI's output) those characters appear as \`\\u2028\`-style escapes,
  and subjects are JSON-quoted, so a quote in a subject cannot close it early.

## Host and Origin

The daemon listens on loopback only and defends itself against DNS rebinding before anything else
(also for \`/health\` and \`/mcp\`):

- \`Host\` must be exactly the daemon's own address and port: \`127.0.0.1:PORT\` or \`localhost:PORT\`
  when bound to \`127.0.0.1\`, \`[::1]:PORT\` or \`localhost:PORT\` when bound to \`::1\`.
- \`Origin\` may be absent (agents and CLIs send none); when present it must be exactly
  \`http://\` plus one of those hosts. Another port is another site.
- Either failure is \`403 forbidden_origin {field: "host" | "origin"}\`.

## MCP door

- \`POST /mcp\` carries JSON-RPC 2.0, a single message or a batch, and always answers plain JSON
  (\`application/json\`), never SSE. The door is stateless: there is no session id header; the
  caller is resolved per HTTP request from the bearer and the attested process.
- Protocol versions: ${[...PROTOCOL_VERSIONS].reverse().join(', ')}. \`initialize\` echoes a supported
  version and answers the latest (${LATEST}) to any other. \`initialize\` inside a batch is refused
  with \`-32600\`. A batch holds at most ${LIMITS.mcpBatchMessages} messages (more: \`-32600\` with
  \`data: {code: "too_large", field: "(batch)", limit, actual}\`, none run); its calls run
  concurrently, with no order between them (send calls that depend on each other, such as
  \`status\` then a send to the new alias, in separate requests), answered in the batch's order.
- Methods: \`initialize\`, \`ping\`, \`tools/list\`, \`tools/call\`. An unknown method is \`-32601\`;
  an unknown tool is \`-32602\`.
- A request made only of notifications (single or batch) is answered \`202\` with an empty body.
- \`GET /mcp\` is \`405\` (the server offers no stream).
- Refusals found before JSON-RPC is read (no or wrong bearer, attestation, Host/Origin, a body that
  is not JSON or is too large) are plain HTTP statuses with the error envelope, as in the table.
- Every other refusal is a tool result with \`isError: true\` whose text is the error envelope, so a
  model can read it and act: \`{"content":[{"type":"text","text":"{\\"error\\":{…}}"}],"isError":true}\`.
- Results are one \`text\` content item holding the operation's JSON response.
- An inbox page over MCP stays within about ${LIMITS.mcpInboxBudgetBytes / 1000} KB (${LIMITS.mcpInboxBudgetBytes} bytes of JSON): every
  message on the page is kept, and bodies that do not fit are cut, marked \`body_truncated: true\`
  and end with a marker naming \`m4a_mail_get\` and the message id, which returns the whole body.
- \`wait_secs\` is clamped to ${LIMITS.waitSecsMcp} s over MCP (${LIMITS.waitSecsHttp} s over HTTP), under common client timeouts.

| tool | HTTP route | summary |
|---|---|---|
${MAIL.map((n) => `| \`${OPERATIONS[n].tool ?? ''}\` | \`POST ${OPERATIONS[n].path}\` | ${cell(OPERATIONS[n].summary)} |`).join('\n')}`;
}

function streamSection(): string {
  const L = STREAM_LIMITS;
  return `## The stream door

For programs that stay connected (the CLI, \`m4a mcp\`, the pi/omp extension, hooks, client
libraries): JSON lines over the Unix socket \`m4a.sock\` in the data directory, which is 0700; the
socket is 0600. \`daemon.json\` names it as \`"socket"\` while the door is up. The door is off with
\`m4a serve --no-stream\`, and off with one warning line when the SO_PEERCRED addon cannot load (it
ships prebuilt; \`npm run build:native\` builds it in a checkout) or the socket path is over the 107
bytes a Unix socket path may hold; clients then use HTTP. A socket file a dead daemon left is
replaced once a connect to it fails; a live listener or a file that is not a socket is left alone.

**Framing.** UTF-8 JSON, one object per line, each ended by \`\\n\`, both directions. A line over
${L.maxLineBytes} bytes (the HTTP body limit plus 64 KiB) is answered \`{"id": null, "error":
{"code": "too_large", "field": "line", "limit": ${L.maxLineBytes}, …}}\` and the connection is closed. A
line that is not a JSON object is answered \`malformed {field: "line"}\` with \`"id": null\`, and
the connection stays open; an empty line is ignored. When the client ends its writing side (a
process that died looks the same), its parked waits end as if it had gone (\`client_gone\`), what
else runs is still answered, then the server ends the connection.

**Requests.** \`{"id": ID, "op": NAME, "input": {…}, "agent_session"?: "<id>"}\`. ID is an integer
0..2^53-1 or a string of 1..${L.idChars} characters, distinct among the connection's requests in flight (a
duplicate is refused \`malformed {field: "id", reason: "duplicate"}\` with \`"id": null\`, so it is
not taken for the first request's answer). A bad ID is refused with \`"id": null\`, an unknown
top-level key \`malformed {field: KEY}\`. \`input\` is the HTTP route's body (absent: \`{}\`), with the
same schema, errors and limits; \`agent_session\` is what the \`x-m4a-agent-session\` header
carries, checked the same way. NAME is any operation of this document by its name (\`send\`,
\`inbox\`, \`task.create\`, \`lease.claim\`, \`account.add\`, \`wake.set\` …), with the callers HTTP
takes: agent operations run as the attested session, operator operations need the operator
credential, and operations served to this machine only are served (the socket is local). An
unknown NAME, or one only the browser has, is \`unknown_route {field: "op"}\`. \`inbox\` waits as over
HTTP (≤ ${LIMITS.waitSecsHttp} s).

- \`hello\` must come first: \`{"token": "<secret>", "client"?: "<name/version, ≤ ${L.clientChars} chars>"}\` →
  \`{"account", "session": "<id>" | null, "version", "max_in_flight": ${L.maxInFlight}, "max_line_bytes": ${L.maxLineBytes}}\`.
  The credential is checked as over HTTP, then the peer: the kernel's record of the connecting
  process (SO_PEERCRED) starts the same walk as TCP attestation (transparent processes, the
  session, corroborated facts), with no \`/proc/net\` read or fd scan. A peer of another OS user is
  \`foreign_user\` unless the daemon allows its uid; a connecting process that exited, or whose pid
  now names a process started after the connection, is \`unattested {reason: "process_gone"}\`.
  The credential and the peer are fixed for the connection's life; the credential is checked
  again on every request (a rotated or removed secret stops working on open connections). Lines
  after a hello are read once it is answered. A refused hello is answered and the connection
  closed; before a hello succeeds every other op is \`unauthenticated\`; a second hello is
  \`malformed {field: "op"}\`. A connection without a successful hello ${L.helloTimeoutMs / 1000} s after connect is closed.
- \`mcp\`: one MCP JSON-RPC message or batch (what \`POST /mcp\` takes) →
  \`{"status": 200 | 202, "body": <JSON-RPC answer> | null}\`.
- \`cancel\`: \`{"id": ID}\` → \`{"ok": true, "found": boolean}\`; ends that request if it still runs (a
  parked wait answers \`malformed {reason: "client_gone"}\`, as if its client had gone).
- \`subscribe\`: \`{"after"?: "<cursor>"}\` (default: the current head) → \`{"cursor"}\`; then the server
  pushes \`mail\` events for mail this session may read that commits after the cursor: exactly what
  a parked \`inbox {after, wait_secs}\` would answer, in the same wake, and marked shown as it
  would be. One subscription per connection; a second replaces the first. \`unsubscribe\`: \`{}\` →
  \`{"ok": true}\`. A subscription whose credential stops verifying closes the connection.

**Server to client.** An answer \`{"id", "result": <what the HTTP route answers with 200>}\`; a
refusal \`{"id", "error": {"code", "message", …details}}\` (the \`error\` object of HTTP error bodies);
an event \`{"event": "mail", "cursor": "<cursor after these>", "messages": [<inbox items without
bodies>, ≤ ${L.eventMessages}]}\`. Answers come in any order: a parked inbox does not hold up a send behind it.
\`"more": true\` on an event would mean further messages follow that are not pushed (read them with
\`inbox {after: cursor}\`); this daemon never sends it.

**Bounds.** At most ${L.maxInFlight} requests in flight per connection: past them the server stops reading the
connection until one finishes (back-pressure, no error). When the connection's unsent output is
over ${L.maxQueuedBytes / 1_048_576} MiB the server stops reading it, and its subscription stops pushing (the mail stays
in the store, nothing is queued in memory) until the output drains; requests already running
still answer. At most ${L.maxUnauthenticated} connections without a successful hello (past it the oldest is
closed); connections in all are bounded as HTTP's.`;
}

export function renderProtocolDoc(): string {
  return [
    proseTop(),
    '',
    streamSection(),
    '',
    '## Mail operations',
    '',
    ...MAIL.flatMap((n) => [mailOpSection(n), '']),
    '## Hook operations',
    '',
    'Used by `m4a hook …` (Claude Code Stop / UserPromptSubmit / SessionStart / PostToolUse, Codex Stop, Gemini CLI AfterAgent, Cursor stop) and `m4a listen`. Only mail new since the session was last told counts; a Stop hook blocks at most 7 times in a row (Claude Code ends the turn after 8); the wake text carries ids, senders and quoted subjects, never bodies, and says that mail comes from other agents, not from the user.',
    '',
    ...HOOKS.flatMap((n) => [mailOpSection(n), '']),
    adminSection(),
    browserSection(),
    '',
    errorSection(),
    '',
    limitSection(),
    '',
  ].join('\n');
}

// ---------------------------------------------------------------- main

function main(argv: string[]): number {
  const check = argv.includes('--check');
  const fi = argv.indexOf('--file');
  const target = fi >= 0 && argv[fi + 1] ? resolve(argv[fi + 1]!) : DEFAULT_TARGET;
  const shown = relative(process.cwd(), target) || target;
  const want = renderProtocolDoc();
  if (check) {
    const have = existsSync(target) ? readFileSync(target, 'utf8') : null;
    if (have === want) return 0;
    console.error(`${shown} is ${have === null ? 'missing' : 'stale'}: run \`npx tsx scripts/gen-protocol-doc.ts\` (npm run docs:protocol) and commit the result.`);
    return 1;
  }
  writeFileSync(target, want);
  console.log(`wrote ${shown}`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
