// Every mail operation once, as data: its HTTP route, MCP tool, schemas and engine call.
// Both doors and docs/protocol.md are driven from this table.
import type { z } from 'zod';
import * as W from '../wire/ops.js';
import * as WK from '../wire/wake.js';
import { LIMITS } from '../wire/limits.js';
import type { Caller, MailEngine } from '../engine/mail-engine.js';

export type Door = 'http' | 'mcp';

export interface MailOp {
  name: string;
  path: string;
  tool: string;
  summary: string;
  input: z.ZodType;
  output: z.ZodType;
  run(engine: MailEngine, caller: Caller, input: never, door: Door): Promise<unknown>;
}

const op = <I extends z.ZodType, O extends z.ZodType>(
  o: Omit<MailOp, 'run' | 'input' | 'output'> & {
    input: I;
    output: O;
    run(engine: MailEngine, caller: Caller, input: z.output<I>, door: Door): Promise<z.infer<O>>;
  },
): MailOp => o as unknown as MailOp;

export const MAIL_OPS: readonly MailOp[] = [
  op({
    name: 'send',
    path: '/mail/send',
    tool: 'm4a_mail_send',
    summary: 'Send mail to an account (claude), one session (claude/s-…, claude/web-ui, claude/@alias) or a room you are a member of (#room; an open room takes anyone). The sender is your own attested session and cannot be set.',
    input: W.SendRequest,
    output: W.SendResponse,
    run: (e, c, i) => e.send(c, i),
  }),
  op({
    name: 'inbox',
    path: '/mail/inbox',
    tool: 'm4a_mail_inbox',
    summary: `Read your mail, oldest first, without changing it. Pass next_cursor as after, or ack what you handled. wait_secs parks until mail arrives (max ${LIMITS.waitSecsHttp} s; ${LIMITS.waitSecsMcp} s over MCP).`,
    input: W.InboxRequest,
    output: W.InboxResponse,
    run: (e, c, i, door) =>
      e.inbox(c, i, door === 'mcp' ? { maxWaitSecs: LIMITS.waitSecsMcp, budgetBytes: LIMITS.mcpInboxBudgetBytes } : { maxWaitSecs: LIMITS.waitSecsHttp }),
  }),
  op({
    name: 'ack',
    path: '/mail/ack',
    tool: 'm4a_mail_ack',
    summary: 'Acknowledge mail you handled (idempotent). Account and room mail is acknowledged once for your whole account.',
    input: W.AckRequest,
    output: W.AckResponse,
    run: (e, c, i) => e.ack(c, i),
  }),
  op({
    name: 'get',
    path: '/mail/get',
    tool: 'm4a_mail_get',
    summary: 'Fetch one message in full, or its whole thread with thread: true.',
    input: W.GetRequest,
    output: W.GetResponse,
    run: (e, c, i) => e.get(c, i),
  }),
  op({
    name: 'unread',
    path: '/mail/unread',
    tool: 'm4a_mail_unread',
    summary: 'Count your readable, unacknowledged mail.',
    input: W.EmptyRequest,
    output: W.UnreadResponse,
    run: (e, c) => e.unread(c),
  }),
  op({
    name: 'whoami',
    path: '/mail/whoami',
    tool: 'm4a_mail_whoami',
    summary: 'Your own address (where others can answer you), account, rooms and session card.',
    input: W.EmptyRequest,
    output: W.WhoamiResponse,
    run: (e, c) => e.whoami(c),
  }),
  op({
    name: 'status',
    path: '/mail/status',
    tool: 'm4a_mail_status',
    summary: 'Declare what you are working on, your role and your parent session; others see it in the directory.',
    input: W.StatusRequest,
    output: W.StatusResponse,
    run: (e, c, i) => e.status(c, i),
  }),
  op({
    name: 'directory',
    path: '/mail/directory',
    tool: 'm4a_mail_peers',
    summary: 'Every account with its sessions (live or not, with cards) and every room with your membership.',
    input: W.EmptyRequest,
    output: W.DirectoryResponse,
    run: (e, c) => e.directory(c),
  }),
  op({
    name: 'remind',
    path: '/mail/remind',
    tool: 'm4a_mail_remind',
    summary: 'Set a durable reminder: in in_secs it arrives as mail from `mailbox` to your session (or your account with account: true), and wakes you like any mail. Survives daemon restarts.',
    input: WK.TimerSetRequest,
    output: WK.TimerOut,
    run: (e, c, i) => e.remind(c, i),
  }),
];

export const OPS_BY_PATH = new Map(MAIL_OPS.map((o) => [o.path, o]));
export const OPS_BY_TOOL = new Map(MAIL_OPS.map((o) => [o.tool, o]));
