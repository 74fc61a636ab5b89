// HTTP-only operations (not MCP tools): the hooks that wake agents (`m4a hook …`, `m4a listen`),
// timers beyond setting one (`m4a timer …`), and receipts (`m4a receipts`).
import * as H from '../wire/hooks.js';
import { EmptyRequest } from '../wire/ops.js';
import * as WK from '../wire/wake.js';
import type { MailOp } from './mail-ops.js';

export const HOOK_OPS: readonly MailOp[] = [
  {
    name: 'notice',
    path: '/mail/notice',
    tool: '',
    summary: 'For hooks: mail new since this session was last told (ids, senders, subjects), and whether a Stop hook should block.',
    input: H.NoticeRequest,
    output: H.NoticeResponse,
    run: (e, c, i) => e.notice(c, i as H.NoticeRequest),
  },
  {
    name: 'listen',
    path: '/mail/listen',
    tool: '',
    summary: 'Turn listen mode on or off for this session: its Stop hook then waits for mail instead of letting the agent go idle.',
    input: H.ListenRequest,
    output: H.ListenResponse,
    run: (e, c, i) => e.listen(c, (i as { on: boolean }).on),
  },
  {
    name: 'timers',
    path: '/mail/timer/list',
    tool: '',
    summary: "Your account's timers, soonest first.",
    input: EmptyRequest,
    output: WK.TimerListResponse,
    run: (e, c) => e.timerList(c),
  },
  {
    name: 'timer snooze',
    path: '/mail/timer/snooze',
    tool: '',
    summary: 'Move a timer of your account to in_secs from now.',
    input: WK.TimerSnoozeRequest,
    output: WK.TimerOut,
    run: (e, c, i) => e.timerSnooze(c, i as { id: string; in_secs: number }),
  },
  {
    name: 'timer clear',
    path: '/mail/timer/clear',
    tool: '',
    summary: 'Remove a timer of your account; it will not fire.',
    input: WK.TimerIdRequest,
    output: WK.OkResponse,
    run: (e, c, i) => e.timerClear(c, i as { id: string }),
  },
  {
    name: 'receipts',
    path: '/mail/receipts',
    tool: '',
    summary: 'Delivery facts of one message per recipient: stored, signalled (adapter, when), surfaced (first inbox read), acknowledged. For its sender, its recipients and the operator.',
    input: WK.ReceiptsRequest,
    output: WK.ReceiptsResponse,
    run: (e, c, i) => e.receiptsOf(c, i as { message_id: string }),
  },
];
