// The table from error code to HTTP status and MCP form, pinned.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_TABLE, MailError, errorFromBody } from '../src/wire/errors.js';

const PINNED: Record<string, [number, 'http' | 'tool_error']> = {
  unauthenticated: [401, 'http'],
  unattested: [403, 'http'],
  foreign_user: [403, 'http'],
  forbidden_origin: [403, 'http'],
  permission_denied: [403, 'tool_error'],
  malformed: [400, 'tool_error'],
  too_large: [413, 'tool_error'],
  unknown_participant: [404, 'tool_error'],
  unknown_session: [404, 'tool_error'],
  unknown_room: [404, 'tool_error'],
  unknown_message: [404, 'tool_error'],
  unknown_timer: [404, 'tool_error'],
  unknown_route: [404, 'http'],
  method_not_allowed: [405, 'http'],
  session_ended: [410, 'tool_error'],
  not_addressed_to_you: [403, 'tool_error'],
  idempotency_conflict: [409, 'tool_error'],
  already_exists: [409, 'tool_error'],
  rate_limited: [429, 'tool_error'],
  bad_credentials: [401, 'http'],
  csrf_failed: [403, 'http'],
  store_unavailable: [503, 'tool_error'],
  store_corrupt: [503, 'tool_error'],
  unknown_task: [404, 'tool_error'],
  not_task_party: [403, 'tool_error'],
  invalid_transition: [409, 'tool_error'],
  task_terminal: [409, 'tool_error'],
  not_supported: [400, 'tool_error'],
  unknown_approval: [404, 'tool_error'],
  not_reviewer: [403, 'tool_error'],
  approval_decided: [409, 'tool_error'],
  approval_expired: [410, 'tool_error'],
  lease_conflict: [409, 'tool_error'],
  lease_lost: [409, 'tool_error'],
  too_many_leases: [429, 'tool_error'],
  lease_exhausted: [409, 'tool_error'],
  unknown_team: [404, 'tool_error'],
  not_team_member: [403, 'tool_error'],
  not_granted: [403, 'tool_error'],
  no_recipients: [409, 'tool_error'],
  contact_refused: [403, 'tool_error'],
  email_unavailable: [409, 'tool_error'],
  external_cap_reached: [507, 'tool_error'],
  auto_submitted: [409, 'tool_error'],
  unknown_attachment: [404, 'tool_error'],
  relay_unavailable: [503, 'tool_error'],
  node_in_use: [409, 'http'],
  not_relayed: [403, 'tool_error'],
  internal: [500, 'tool_error'],
};

describe('error table', () => {
  it('maps every code to the pinned HTTP status and MCP form', () => {
    const actual = Object.fromEntries(Object.entries(ERROR_TABLE).map(([k, v]) => [k, [v.http, v.mcp]]));
    assert.deepEqual(actual, PINNED);
  });

  it('has one envelope with the inputs beside the code, and round-trips through a client', () => {
    const e = new MailError('too_large', 'subject is over its limit of 512', { field: 'subject', limit: 512, actual: 513 });
    const body = e.toBody();
    assert.deepEqual(body, { error: { code: 'too_large', message: 'subject is over its limit of 512', field: 'subject', limit: 512, actual: 513 } });
    const back = errorFromBody(JSON.parse(JSON.stringify(body)), 413);
    assert.equal(back.code, 'too_large');
    assert.deepEqual(back.details, { field: 'subject', limit: 512, actual: 513 });
    assert.equal(errorFromBody({ nonsense: 1 }, 502).code, 'internal');
  });
});
