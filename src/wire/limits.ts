// Every limit of the wire contract, in bytes unless said otherwise. At the limit is accepted;
// one over is refused with too_large {field, limit, actual}.
export const LIMITS = {
  selectorBytes: 128,
  subjectBytes: 512,
  bodyBytes: 65_536,
  correlationBytes: 512,
  refsCount: 8,
  refLocatorBytes: 512,
  refDigestBytes: 128,
  inboxLimitDefault: 50,
  inboxLimitMax: 256,
  ackIdsMax: 256,
  declaredBytes: 512,
  labelBytes: 128,
  urlBytes: 2048,
  /** Request bodies over this are refused before parsing (a 64 KiB body can grow ~6x as JSON escapes). */
  requestBodyBytes: 1_048_576,
  waitSecsHttp: 60,
  waitSecsMcp: 50,
  /** JSON-RPC messages in one MCP batch (they run concurrently, so a batch costs its slowest call). */
  mcpBatchMessages: 32,
  /** An MCP inbox page stays within this many bytes of JSON; longer bodies are cut with a marker. */
  mcpInboxBudgetBytes: 20_000,
} as const;
