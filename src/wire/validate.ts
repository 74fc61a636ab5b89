// Turn zod's verdict into the named error of the wire contract.
import type { z } from 'zod';
import { MailError, type ErrorDetails } from './errors.js';

function fieldOf(path: readonly PropertyKey[]): string {
  return path.length ? path.map(String).join('.') : '(body)';
}

function valueAt(v: unknown, path: readonly PropertyKey[]): unknown {
  let cur = v;
  for (const k of path) cur = cur !== null && typeof cur === 'object' ? (cur as Record<PropertyKey, unknown>)[k] : undefined;
  return cur;
}

export function parseInput<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  if (!issue) throw new MailError('malformed', 'invalid input', { field: '(body)', reason: 'invalid' });
  const field = fieldOf(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '?';
    const full = field === '(body)' ? key : `${field}.${key}`;
    const reason = key === 'from' ? 'there is no from field: the sender is derived from your credential and process' : 'unknown field';
    throw new MailError('malformed', `${full}: ${reason}`, { field: full, reason });
  }
  const params = (issue as { params?: { m4a?: string; limit?: number; actual?: number; code_point?: string } }).params;
  if (params?.m4a === 'too_large') {
    throw new MailError('too_large', `${field} is over its limit of ${params.limit}`, { field, limit: params.limit ?? 0, actual: params.actual ?? 0 });
  }
  // A number over its schema maximum (inbox limit ≤ 256) is the same named error as a long text.
  if (issue.code === 'too_big' && issue.origin === 'number') {
    const actual = valueAt(value, issue.path);
    throw new MailError('too_large', `${field} is over its limit of ${String(issue.maximum)}`, {
      field,
      limit: Number(issue.maximum),
      actual: typeof actual === 'number' ? actual : 0,
    });
  }
  // A refused character is named by its code point (U+2028), beside the field.
  const details: ErrorDetails = { field, reason: issue.message };
  if (params?.code_point) details.code_point = params.code_point;
  throw new MailError('malformed', `${field}: ${issue.message}`, details);
}
