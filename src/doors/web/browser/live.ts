// Live updates: one long-poll parked on the daemon's own wait, asked again as soon as it answers;
// no polling loop. A failure backs off up to 30 s; a new login or a logout ends the old loop.
import { messageId, threadOf, type ApiError, type InboxAnswer, type Message } from './answers.js';
import { api } from './api.js';
import { $, announce, clear, shellPart } from './dom.js';
import { loadDirectory, loadInbox, who } from './mail-data.js';
import { setUnread } from './nav.js';
import { drawInboxList } from './page-inbox.js';
import { refreshReservations } from './page-reservations.js';
import { pageTask } from './page-task.js';
import { refreshBoard } from './page-tasks.js';
import { pageThread } from './page-thread.js';
import { state } from './state.js';

/** After a login (or a reload that found one): the inbox and directory, then live updates. */
export function startAfterLogin(): Promise<void> {
  return Promise.all([loadInbox(), loadDirectory().catch(() => null)]).then(() => startLive());
}

function startLive(): void {
  const gen = ++state.liveGen;
  let backoff = 1000;
  function next(): void {
    if (gen !== state.liveGen || !state.me) return;
    api<InboxAnswer>('inbox', { after: state.cursor, wait_secs: 25 }).then(
      (r) => {
        backoff = 1000;
        if (gen !== state.liveGen) return;
        state.cursor = r.next_cursor;
        setUnread(r.unread);
        if (r.messages.length) arrived(r.messages);
        next();
      },
      (err: ApiError) => {
        if (gen !== state.liveGen || err.code === 'unauthenticated' || err.code === 'csrf_failed') return;
        setTimeout(next, backoff);
        backoff = Math.min(backoff * 2, 30000);
      },
    );
  }
  next();
}

function arrived(msgs: Message[]): void {
  for (const m of msgs) {
    const id = messageId(m);
    if (state.byId.has(id)) continue;
    state.byId.set(id, m);
    state.inbox.unshift(m);
  }
  const last = msgs[msgs.length - 1];
  if (last) announce(msgs.length === 1 ? 'New mail from ' + who(last.from) + ': ' + last.subject : msgs.length + ' new messages');
  if (state.view === '/web/inbox') drawInboxList();
  const open = $('thread');
  const thread = open?.getAttribute('data-thread');
  if (open && msgs.some((m) => threadOf(m) === thread)) pageThread(clear(shellPart('main')), open.getAttribute('data-open') || '', true);
  // A task's every change is mail in its thread to the other party: redraw what shows it.
  const taskMail = msgs.some((m) => /^Task\b/.test(m.subject));
  if (state.view === '/web/tasks' && taskMail) refreshBoard();
  // A pooled task's claim, return or failure is task mail; file reservations have none (the view's timer).
  if (state.view === '/web/reservations' && taskMail) refreshReservations();
  const task = $('task');
  const taskThread = task?.getAttribute('data-thread');
  if (task && taskThread && msgs.some((m) => threadOf(m) === taskThread)) pageTask(clear(shellPart('main')), task.getAttribute('data-task') || '', true);
}
