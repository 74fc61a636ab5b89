// DOM helpers shared by every page. Message data only ever reaches the page through textContent and
// text nodes, never as HTML.
import type { ApiError, SenderKind } from './answers.js';

type AttrValue = string | number | boolean | null | undefined | ((e: Event) => void);
export type Attrs = Record<string, AttrValue>;
export type Child = Node | string | null | undefined | false;

/** Builds an element. attrs: class, text (textContent), on<event> handlers, anything else as an
 *  attribute. Children: nodes or strings (strings become text nodes, never markup). */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, children: readonly Child[] = []): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = String(v);
    else if (k === 'text') el.textContent = String(v);
    else if (k.slice(0, 2) === 'on' && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return el;
}

export function clear<E extends Node>(el: E): E {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** An element of the shell or of the page drawn so far, or null. */
export const $ = (id: string): HTMLElement | null => document.getElementById(id);

/** An element the shell always has (main, nav, live). */
export function shellPart(id: 'main' | 'nav' | 'live'): HTMLElement {
  const el = $(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el;
}

export function announce(msg: string): void {
  const live = shellPart('live');
  live.textContent = '';
  setTimeout(() => {
    live.textContent = msg;
  }, 50);
}

export function when(iso: string): HTMLTimeElement {
  const d = new Date(iso);
  return h('time', { datetime: iso, title: d.toISOString(), text: d.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' }) });
}

export function kindBadge(kind: SenderKind): HTMLSpanElement {
  // Mail from outside is untrusted: the badge says so in words, not only in colour.
  if (kind === 'external') return h('span', { class: 'badge kind-external', title: 'e-mail from outside this mailbox: untrusted content', text: 'external e-mail · untrusted' });
  const word = kind === 'human' ? 'person' : kind;
  return h('span', { class: 'badge kind-' + kind, title: kind === 'human' ? 'written by a person' : 'sent by an ' + kind + ' account', text: word });
}

/** A delegate's mail through a relay: the badge names the delegate. */
export function viaBadge(m: { via?: { relay: string; delegate: string } }): HTMLSpanElement | null {
  if (!m.via) return null;
  return h('span', { class: 'badge via', title: 'written by a delegate through the relay ' + m.via.relay, text: 'via delegate ' + m.via.delegate });
}

export function errorText(err: ApiError | null | undefined): string {
  if (!err) return 'Something went wrong.';
  const extra = err.field ? ' (' + err.field + ')' : '';
  return (err.message || err.code) + extra;
}

export interface FormError {
  show(msg: string): void;
  hide(): void;
}

export function formError(form: HTMLFormElement): FormError {
  const box = h('p', { class: 'error', role: 'alert', hidden: true });
  form.appendChild(box);
  return {
    show: (msg) => {
      box.textContent = msg;
      box.hidden = false;
    },
    hide: () => {
      box.hidden = true;
      box.textContent = '';
    },
  };
}

export function field(label: string, input: HTMLElement, hint?: string): HTMLDivElement {
  const id = input.id || 'f-' + Math.random().toString(36).slice(2, 9);
  input.id = id;
  const parts: Child[] = [h('label', { for: id, text: label }), input];
  if (hint) {
    input.setAttribute('aria-describedby', id + '-hint');
    parts.push(h('p', { class: 'hint', id: id + '-hint', text: hint }));
  }
  return h('div', { class: 'field' }, parts);
}

/** A definition list of the pairs that have a value. */
export function dl(pairs: readonly (readonly [string, string | number | undefined | null])[]): HTMLElement {
  const items = pairs.filter((p) => p[1] !== undefined && p[1] !== null && p[1] !== '');
  if (!items.length) return h('p', { class: 'none', text: 'nothing' });
  const el = h('dl', {});
  for (const p of items) {
    el.appendChild(h('dt', { text: p[0] }));
    el.appendChild(h('dd', { text: String(p[1]) }));
  }
  return el;
}

/** How long until `iso`, in words: "in 40 s", "in 9 min", "in 2 h 5 min", or "expired". */
export function untilText(iso: string, now = Date.now()): string {
  const s = Math.floor((new Date(iso).getTime() - now) / 1000);
  if (s <= 0) return 'expired';
  if (s < 60) return 'in ' + s + ' s';
  const m = Math.floor(s / 60);
  return m < 60 ? 'in ' + m + ' min' : 'in ' + Math.floor(m / 60) + ' h' + (m % 60 ? ' ' + (m % 60) + ' min' : '');
}

/** An expiry, relative and absolute: "in 9 min (1 Dec 2026, 10:15)". */
export function expiry(iso: string): HTMLSpanElement {
  return h('span', { class: 'expiry' }, [h('span', { class: 'rel', text: untilText(iso) }), ' (', when(iso), ')']);
}
