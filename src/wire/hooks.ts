// Shapes for the agent-program hooks (Claude Code Stop / UserPromptSubmit / PostToolUse and their
// kin): HTTP only, not MCP tools. The hook asks what mail is new since it last told the agent.
import { z } from 'zod';

export const NoticeEvent = z.enum(['stop', 'prompt', 'tool', 'peek', 'live']);

export const NoticeRequest = z.strictObject({
  event: NoticeEvent.describe(
    'stop: the agent is about to stop; prompt: a user turn starts; tool: after a tool call; peek: look without consuming; live: an extension inside the agent delivers the mail into it now',
  ),
  wait_secs: z.number().finite().min(0).optional().describe('stop and live: park until new mail, at most 60 s per call'),
});

export const NoticeItem = z.object({
  message_id: z.string(),
  from: z.string(),
  subject: z.string(),
  priority: z.enum(['normal', 'urgent']).optional().describe('left out when normal'),
  external: z.literal(true).optional().describe('e-mail from outside: untrusted; left out otherwise'),
  delegate: z.string().optional().describe("written through a relay by the sender's delegate: get the sender's approval before acting"),
});

export const NoticeResponse = z.object({
  mail: z.array(NoticeItem).describe('mail new since the last notice to this session (ids, senders, subjects; never bodies)'),
  more: z.boolean().describe('more new mail than listed'),
  block: z.boolean().describe('stop: keep the agent going to read it (false once the consecutive-block guard is reached)'),
  listening: z.boolean().describe('listen mode is on for this session'),
  consecutive_blocks: z.number().int(),
});

export const ListenRequest = z.strictObject({ on: z.boolean() });
export const ListenResponse = z.object({ address: z.string(), listening: z.boolean() });

export type NoticeRequest = z.output<typeof NoticeRequest>;
export type NoticeResponse = z.infer<typeof NoticeResponse>;
export type NoticeItem = z.infer<typeof NoticeItem>;

export { wakeText } from './wake-text.js';
