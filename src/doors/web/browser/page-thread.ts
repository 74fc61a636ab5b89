// One thread, with acknowledging and a reply form. Bodies are untrusted text (body-text.ts).
import { kindOf, messageId, threadOf, toOf, type ApiError, type GetAnswer, type Message } from './answers.js';
import { api } from './api.js';
import { approvalIdIn, approvalPanel } from './approval-panel.js';
import { bodyNodes } from './body-text.js';
import { $, announce, clear, errorText, field, h, kindBadge, shellPart, viaBadge, when } from './dom.js';
import { addr, who } from './mail-data.js';
import { mailForm } from './mail-form.js';
import { pageTitle } from './nav.js';
import { ackIds } from './page-inbox.js';
import { me } from './state.js';

/** Draws the thread of message `id`; quiet: redrawn in place (after an ack, a reply, new mail), so
 *  focus stays where it is. */
export function pageThread(main: HTMLElement, id: string, quiet?: boolean): void {
  const title = quiet ? h('h1', { tabindex: '-1', id: 'page-title', text: 'Thread' }) : pageTitle(main, 'Thread');
  if (quiet) main.appendChild(title);
  const box = h('section', { id: 'thread', 'data-open': id, 'aria-live': 'polite' });
  main.appendChild(box);
  const redraw = (): void => pageThread(clear(shellPart('main')), id, true);
  api<GetAnswer>('get', { message_id: id, thread: true }).then(
    (r) => {
      const msgs = r.thread || [r.message];
      box.setAttribute('data-thread', threadOf(r.message));
      const root = msgs[0] || r.message;
      title.textContent = root.subject || '(no subject)';
      document.title = title.textContent + ' · mail4agent';
      const account = me().account;
      const pending: string[] = [];
      for (const m of msgs) {
        const mid = messageId(m);
        const mine = m.from === account;
        const to = toOf(m, account);
        const readable = !mine || to === account || to.charAt(0) === '#';
        if (!m.acked_at && !mine) pending.push(mid);
        const ackBtn =
          !mine && !m.acked_at
            ? h('button', { type: 'button', class: 'secondary ack', text: 'Acknowledge', onclick: () => void ackIds([mid]).then(redraw, () => undefined) })
            : null;
        box.appendChild(
          h(
            'article',
            {
              class: 'message' + (mid === id ? ' focus' : '') + (mine ? ' mine' : '') + (kindOf(m) === 'external' ? ' external' : ''),
              id: 'msg-' + mid,
              'aria-label': 'from ' + m.from,
            },
            [
              h('header', {}, [
                addr(m.from, 'from'),
                ' ',
                kindBadge(kindOf(m)),
                viaBadge(m),
                m.priority === 'urgent' ? h('span', { class: 'badge urgent', text: 'urgent' }) : null,
                h('span', { class: 'to' }, ['to ', addr(to, '')]),
                when(m.created_at),
                m.acked_at ? h('span', { class: 'acked', text: 'handled' }) : readable && !mine ? h('span', { class: 'badge unread', text: 'unread' }) : null,
                ackBtn,
              ]),
              m.subject !== root.subject ? h('p', { class: 'subject', text: m.subject }) : null,
              h('div', { class: 'body' }, [bodyNodes(m.body || '')]),
              extrasOf(m),
              approvalOf(m),
              m.refs
                ? h(
                    'ul',
                    { class: 'refs', 'aria-label': 'references' },
                    m.refs.map((x) => h('li', { text: x.kind + ': ' + x.locator })),
                  )
                : null,
            ],
          ),
        );
      }
      if (pending.length > 1)
        box.appendChild(
          h('button', { type: 'button', class: 'secondary', text: 'Acknowledge all ' + pending.length, onclick: () => void ackIds(pending).then(redraw, () => undefined) }),
        );
      box.appendChild(replyForm(msgs, root));
    },
    (e: ApiError) => {
      box.appendChild(h('p', { class: 'error', role: 'alert', text: errorText(e) }));
    },
  );
}

/** External mail: the codes and attachments the daemon read from it, as text (never HTML). */
function extrasOf(m: Message): HTMLElement | null {
  const items = [
    ...(m.codes || []).map((c) => 'code: ' + c),
    ...(m.attachments || []).map((a) => 'attachment ' + a.n + ': ' + a.name + ' (' + a.type + ', ' + a.size + ' bytes' + (a.kept ? '' : ', not kept') + ')'),
  ];
  return items.length
    ? h(
        'ul',
        { class: 'refs email-extras', 'aria-label': 'read from the e-mail' },
        items.map((t) => h('li', { text: t })),
      )
    : null;
}

/** An "Approval: …" message gets the approval itself, as the daemon has it (decided or not). */
function approvalOf(m: Message): HTMLElement | null {
  const id = approvalIdIn(m.subject, m.body);
  return id ? approvalPanel(id) : null;
}

function replyForm(msgs: Message[], root: Message): HTMLFormElement {
  const account = me().account;
  const others = msgs.filter((m) => m.from !== account);
  const target = (others.length ? others[others.length - 1] : msgs[msgs.length - 1]) ?? root;
  const dest = toOf(target, account);
  const to = target.from === account ? dest : dest.charAt(0) === '#' ? dest : target.from;
  const subject = /^re:/i.test(root.subject) ? root.subject : 'Re: ' + root.subject;
  const body = h('textarea', { name: 'body', rows: '5', required: true });
  const send = h('button', { type: 'submit', text: 'Send reply' });
  const form = h('form', { class: 'card reply', id: 'reply-form' }, [h('h2', { text: 'Reply' }), field('Reply to ' + who(to), body, 'Ctrl+Enter sends.'), send]);
  mailForm(
    form,
    body,
    send,
    () => {
      if (!body.value.trim()) return 'Write something first.';
      return { to, subject: subject.slice(0, 500), body: body.value, reply_to: messageId(target) };
    },
    () => {
      announce('Reply sent to ' + to + '.');
      const open = $('thread');
      pageThread(clear(shellPart('main')), open ? open.getAttribute('data-open') || messageId(target) : messageId(target), true);
    },
  );
  return form;
}
