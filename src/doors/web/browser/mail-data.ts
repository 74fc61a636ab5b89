// Loading the inbox and the directory, and naming addresses with what the directory knows.
import { messageId, type Directory, type InboxAnswer } from './answers.js';
import { api } from './api.js';
import { h } from './dom.js';
import { setUnread } from './nav.js';
import { state } from './state.js';

export function loadInbox(): Promise<void> {
  return api<InboxAnswer>('inbox', {}).then((r) => {
    state.inbox = r.messages;
    state.byId = new Map(r.messages.map((m) => [messageId(m), m]));
    state.cursor = r.next_cursor;
    setUnread(r.unread);
  });
}

export function loadDirectory(): Promise<Directory> {
  return api<Directory>('directory', { detail: true, include_ended: true }).then((d) => {
    state.dir = d;
    return d;
  });
}

/** A short name for an address: account/slug when the directory knows the session, else the
 *  session id cut to 8 hex digits (the full address stays in the title). */
export function who(address: string): string {
  const m = /^([^/]+)\/(s-[0-9a-f]{8})[0-9a-f]*$/.exec(address || '');
  if (!m) return address;
  let found: string | null = null;
  for (const a of state.dir ? state.dir.accounts : []) {
    if (a.id !== m[1]) continue;
    for (const s of a.sessions) if (s.address === address && s.slug) found = a.id + '/' + s.slug;
  }
  return found || m[1] + '/' + m[2] + '\u2026';
}

export function addr(a: string, cls: string): HTMLSpanElement {
  return h('span', { class: cls, title: a, text: who(a) });
}
