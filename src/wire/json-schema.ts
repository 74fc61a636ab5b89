// A zod schema as JSON Schema for readers (the MCP tool list, docs/protocol.md): without `$schema`
// and without zod's ±2^53 bounds on integers, which say nothing a reader needs.
import { z } from 'zod';

export type JsonSchema = Record<string, unknown>;

export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _drop, ...s } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  return dropSafeIntegerBounds(s) as JsonSchema;
}

function dropSafeIntegerBounds(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropSafeIntegerBounds);
  if (v === null || typeof v !== 'object') return v;
  const out: JsonSchema = {};
  for (const [k, x] of Object.entries(v)) {
    if ((k === 'minimum' && x === Number.MIN_SAFE_INTEGER) || (k === 'maximum' && x === Number.MAX_SAFE_INTEGER)) continue;
    out[k] = dropSafeIntegerBounds(x);
  }
  return out;
}
