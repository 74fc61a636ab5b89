// HTTP-only operations for the hooks that wake agents (`m4a hook …`, `m4a listen`); not MCP tools.
import * as H from '../wire/hooks.js';
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
];
