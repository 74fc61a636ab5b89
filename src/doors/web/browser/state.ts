// What the page holds between views: the login, its CSRF token, the inbox as loaded and live-updated,
// and the directory. The token lives in the origin's storage so that a reload keeps the login; the
// cookie alone opens nothing.
import type { Directory, Me, Message } from './answers.js';

const CSRF_KEY = 'm4a.csrf';

export interface PageState {
  me: Me | null;
  csrf: string | null;
  dir: Directory | null;
  /** Newest first. */
  inbox: Message[];
  byId: Map<string, Message>;
  cursor: string | null;
  unread: number;
  unreadOnly: boolean;
  /** Bumped to end the running live update (logout, a new login). */
  liveGen: number;
  view: string | null;
  /** Where to go after logging in (a link opened while logged out). */
  returnTo: string | null;
}

export const state: PageState = { me: null, csrf: null, dir: null, inbox: [], byId: new Map(), cursor: null, unread: 0, unreadOnly: false, liveGen: 0, view: null, returnTo: null };
try {
  state.csrf = localStorage.getItem(CSRF_KEY);
} catch {
  state.csrf = null;
}

/** The person logged in; the pages that call it are drawn only after login. */
export function me(): Me {
  if (!state.me) throw new Error('not logged in');
  return state.me;
}

export function setCsrf(v: string | null): void {
  state.csrf = v;
  try {
    if (v) localStorage.setItem(CSRF_KEY, v);
    else localStorage.removeItem(CSRF_KEY);
  } catch {
    /* private mode: this tab only */
  }
}
