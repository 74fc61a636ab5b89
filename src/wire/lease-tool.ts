// File reservations as one MCP tool (m4a_reserve) and the CLI's `m4a reserve`: a flat request for
// every action, and the claim of several globs at once (all or none). The action's own schema
// checks the fields, so refusals name them as the HTTP operations do (docs/leases.md).
import { z } from 'zod';
import { text } from './fields.js';
import { LEASE_LIMITS, LeaseListResponse, LeaseMode, LeaseOut, TtlSecs } from './leases.js';

export const McpReserveRequest = z.strictObject({
  action: z.enum(['claim', 'renew', 'release', 'list']).describe('what to do'),
  paths: z.array(z.string()).optional().describe('globs, src/**'),
  root: z.string().optional().describe('repo root, absolute'),
  shared: z.boolean().optional().describe('not exclusive'),
  ttl_secs: z.number().optional().describe(`seconds, default ${LEASE_LIMITS.ttlDefaultSecs}`),
  reason: z.string().optional().describe('why'),
  lease_id: z.string().optional().describe('renew, release'),
  epoch: z.number().optional().describe('renew, release'),
});

/** Several globs of one repository claimed together: every one, or none of them. */
export const ReserveClaimRequest = z.strictObject({
  paths: z.array(text(LEASE_LIMITS.globBytes)).min(1).max(LEASE_LIMITS.perHolder),
  root: text(LEASE_LIMITS.rootBytes),
  mode: LeaseMode.optional(),
  ttl_secs: TtlSecs.optional(),
  reason: text(LEASE_LIMITS.reasonBytes).optional(),
});

export const ReserveListRequest = z.strictObject({ root: text(LEASE_LIMITS.rootBytes).optional() });

export const ReserveResponse = z.union([LeaseOut, LeaseListResponse]);

export type McpReserveRequest = z.output<typeof McpReserveRequest>;
export type ReserveClaimRequest = z.output<typeof ReserveClaimRequest>;
export type ReserveListRequest = z.output<typeof ReserveListRequest>;
