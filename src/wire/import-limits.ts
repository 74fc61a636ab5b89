// The bounds of one omp-mail import request. No zod here: the CLI splits a large import by them
// and must not load the schemas at start (every `m4a` command would pay for it).
export const IMPORT_LIMITS = {
  sessions: 1000,
  messages: 1000,
  aliases: 16,
  nameBytes: 128,
  cwdBytes: 4096,
} as const;

/** The bounds of one `m4a import interagentmail|agent-mail` request (wire/import-mail.ts). */
export const MAIL_IMPORT_LIMITS = {
  messages: 1000,
  timers: 1000,
  idBytes: 256,
  /** Acknowledgements of one room post (the chat's readers). */
  seenBy: 1000,
} as const;
