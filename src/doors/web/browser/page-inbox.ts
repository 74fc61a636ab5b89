// The inbox: newest first, live-updated; opening a message does not acknowledge it.
import { kindOf, messageId, toOf, type AckAnswer, type ApiError } from './answers.js';
import { api } from './api.js';
import { $, announce, clear, errorText, h, kindBadge, viaBadge, when } from './dom.js';
import { addr } from './mail-data.js';
import { pageTitle, setUnread } from './nav.js';
import { me, state } from './state.js';

export function pageInbox(main: HTMLElement): void {
  pageTitle(main, 'Inbox');
  const only = h('input', {
    type: 'checkbox',
    id: 'unread-only',
    checked: state.unreadOnly,
    onchange: () => {
      state.unreadOnly = only.checked;
      drawInboxList();
    },
  });
  main.appendChild(
    h('div', { class: 'toolbar' }, [
      h('label', { class: 'check', for: 'unread-only' }, [only, ' Unread only']),
      h('a', { href: '/web/compose', 'data-nav': true, class: 'button', text: 'Write a message' }),
    ]),
  );
  main.appendChild(h('p', { class: 'hint', text: 'New mail appears here as it arrives. Opening a message does not acknowledge it: acknowledge when it is handled.' }));
  main.appendChild(h('ul', { class: 'msglist', id: 'msglist', 'aria-label': 'messages, newest first' }));
  drawInboxList();
}

export function drawInboxList(): void {
  const list = $('msglist');
  if (!list) return;
  clear(list);
  const shown = state.inbox.filter((m) => !state.unreadOnly || !m.acked_at);
  if (!shown.length) list.appendChild(h('li', { class: 'empty', text: state.unreadOnly ? 'No unread mail.' : 'No mail yet.' }));
  for (const m of shown) {
    const unread = !m.acked_at;
    const id = messageId(m);
    const li = h('li', { class: 'msg' + (unread ? ' unread' : ''), 'data-id': id }, [
      h('a', { href: '/web/thread/' + id, 'data-nav': true, class: 'open' }, [
        h('span', { class: 'line1' }, [
          unread ? h('span', { class: 'dot', title: 'unread' }, [h('span', { class: 'sr-only', text: 'unread: ' })]) : null,
          addr(m.from, 'from'),
          ' ',
          kindBadge(kindOf(m)),
          viaBadge(m),
          m.priority === 'urgent' ? h('span', { class: 'badge urgent', text: 'urgent' }) : null,
          h('span', { class: 'to' }, ['to ', addr(toOf(m, me().account), '')]),
          when(m.created_at),
        ]),
        h('span', { class: 'subject', text: m.subject || '(no subject)' }),
        h('span', { class: 'preview', text: m.body || '' }),
      ]),
      unread
        ? h('button', {
            type: 'button',
            class: 'secondary ack',
            'aria-label': 'Acknowledge: ' + m.subject,
            text: 'Acknowledge',
            onclick: () => void ackIds([id]).catch(() => undefined),
          })
        : h('span', { class: 'acked', text: 'handled' }),
    ]);
    list.appendChild(li);
  }
}

/** Acknowledges, marks the loaded copies handled and says so; a failure is announced and rethrown. */
export function ackIds(ids: string[]): Promise<AckAnswer> {
  return api<AckAnswer>('ack', { message_ids: ids }).then(
    (r) => {
      for (const a of r.acked) {
        const m = state.byId.get(a.message_id);
        if (m) m.acked_at = a.acked_at;
      }
      setUnread(r.unread);
      announce(ids.length === 1 ? 'Acknowledged.' : ids.length + ' messages acknowledged.');
      if (state.view === '/web/inbox') drawInboxList();
      return r;
    },
    (e: ApiError) => {
      announce('Could not acknowledge: ' + errorText(e));
      throw e;
    },
  );
}
