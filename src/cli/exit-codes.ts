// Exit codes, documented in docs/cli.md. A module of its own so main.ts can use them without
// loading output.ts (and through it the client and wire layers) for `serve` or `--help`.
export const EXIT = { ok: 0, failed: 1, usage: 2, unreachable: 3, locked: 4, impostor: 5 } as const;
