// The one way the page talks to the daemon: POST JSON to /web/api/NAME with this login's CSRF token.
import type { ApiError } from './answers.js';
import { state } from './state.js';

/** A refusal, as an Error (so it carries a stack) holding the fields of the daemon's error body. */
export class ApiFailure extends Error implements ApiError {
  readonly code: string;
  field?: string;
  retry_after_ms?: number;
  scope?: string;
  constructor(body: ApiError) {
    super(body.message ?? '');
    Object.assign(this, body);
    this.code = body.code;
  }
}

let authLost: (msg: string) => void = () => undefined;

/** What to do when the daemon says the login ended (set once by app.ts: draw the login page). */
export function onAuthLost(fn: (msg: string) => void): void {
  authLost = fn;
}

/** Resolves with the answer's JSON; rejects with an ApiFailure. */
export function api<T>(name: string, body?: object): Promise<T> {
  return fetch('/web/api/' + name, {
    method: 'POST',
    credentials: 'same-origin',
    cache: 'no-store',
    headers: { 'content-type': 'application/json', 'x-m4a-csrf': state.csrf || '' },
    body: JSON.stringify(body || {}),
  }).then(
    (r) =>
      r
        .json()
        .catch(() => null)
        .then((j: { error?: ApiError } | null) => {
          if (r.ok) return j as T;
          const err: ApiError = (j && j.error) || { code: 'internal', message: 'HTTP ' + r.status };
          if (name !== 'login' && (err.code === 'unauthenticated' || err.code === 'csrf_failed')) authLost('Your login ended. Log in again.');
          throw new ApiFailure(err);
        }),
    () => {
      throw new ApiFailure({ code: 'unreachable', message: 'The daemon does not answer.' });
    },
  );
}
