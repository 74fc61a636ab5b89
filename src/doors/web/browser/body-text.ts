// A message body is untrusted text: it becomes text nodes; bare http(s) links become inert anchors
// that open a new tab without referrer or opener, and a URL carrying user:password@ stays text.
import { h } from './dom.js';

export function bodyNodes(text: string): DocumentFragment {
  const frag = document.createDocumentFragment();
  const re = /\bhttps?:\/\/[^\s<>"'\u0000-\u001f]+/g;
  let last = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    const url = m[0].replace(/[.,;:!?)\]}'"]+$/, '');
    frag.appendChild(document.createTextNode(text.slice(last, m.index)));
    let u: URL | null;
    try {
      u = new URL(url);
    } catch {
      u = null;
    }
    if (u && (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password) {
      frag.appendChild(
        h('a', {
          href: u.href,
          rel: 'noopener noreferrer nofollow',
          target: '_blank',
          referrerpolicy: 'no-referrer',
          class: 'ext',
          title: 'opens ' + u.host + ' in a new tab',
          text: url,
        }),
      );
    } else {
      frag.appendChild(document.createTextNode(url));
    }
    last = m.index + url.length;
    re.lastIndex = last;
  }
  frag.appendChild(document.createTextNode(text.slice(last)));
  return frag;
}
