// The opencode wake adapter: reaches the opencode server that holds the session (`opencode serve
// --port N`, or the TUI started with `--port N`) and gives it the fixed wake text as a prompt.
//
//   GET  /session/{id}              the session must exist there (a prompt to an id the server does
//                                   not hold is refused or, in some versions, silently resumed)
//   GET  /session/status            busy or idle, for the receipt's detail
//   POST /session/{id}/prompt_async 204: accepted. Idle: a turn starts; busy: opencode gives it
//                                   after the running tool's result.
//
// The session id is the one opencode's mail4agent plugin reported; without one, the most recently
// updated top-level session of the session's directory. With `password_file`, every request carries
// Basic auth (user `opencode`, as opencode's server expects when OPENCODE_SERVER_PASSWORD is set),
// the password read from the user's file at each call and never stored (as a2a's token_file; a
// variable of the daemon's environment would not do: an auto-started daemon gets an allow-listed
// environment).
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { accessSync, constants, readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { MailError } from '../wire/errors.js';
import type { OpencodeStep } from '../wire/wake.js';
import { checkWebhookUrl, type CheckedWebhookUrl } from './remote-url.js';
import type { ListenerOwner, WakeAdapter, WakeRequest, WakeResult } from './types.js';

export interface OpencodeAdapterOptions {
  /** Every request, all of it (default 10 s). */
  timeoutMs?: number;
  /** A loopback port another OS user holds (opencode not running, the port taken) gets no request. */
  listenerOwner?: ListenerOwner;
}

/** An answer is small (a session's info, a status map); more is not read. */
const MAX_BODY = 1 << 20;
const SESSION_ID = /^ses[A-Za-z0-9_-]{1,125}$/;

/** For `m4a wake set`: MailError('malformed', {field, reason}) for a step that could never run. */
export function checkOpencodeStep(step: OpencodeStep): void {
  checkOpencodeUrl(step);
  const file = step.password_file;
  if (file === undefined) return;
  if (!isAbsolute(file)) throw new MailError('malformed', 'password_file: give an absolute path', { field: 'password_file', reason: 'must be an absolute path' });
  try {
    accessSync(file, constants.R_OK);
  } catch {
    throw new MailError('malformed', 'password_file: the daemon cannot read it', { field: 'password_file', reason: 'cannot be read' });
  }
}

function checkOpencodeUrl(step: OpencodeStep): CheckedWebhookUrl {
  const u = checkWebhookUrl(step.url, step.allow_remote ?? false);
  if (u.path !== '/') throw new MailError('malformed', `url: the opencode server's root only (http://127.0.0.1:PORT), no path or query`, { field: 'url', reason: 'has a path' });
  return u;
}

class NotReached extends Error {}
const fail = (detail: string): never => {
  throw new NotReached(detail);
};

interface Answer {
  status: number;
  body: unknown;
}

export function createOpencodeAdapter(step: OpencodeStep, opts: OpencodeAdapterOptions = {}): WakeAdapter {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  // Checked when the chain was set; a stored step that no longer passes wakes nobody.
  let u: CheckedWebhookUrl | null = null;
  let invalid = '';
  try {
    u = checkOpencodeUrl(step);
  } catch (err) {
    invalid = err instanceof Error ? err.message : String(err);
  }

  /** Read at each call: a changed password takes effect at once. */
  function auth(): Record<string, string> {
    if (step.password_file === undefined) return {};
    let pw: string;
    try {
      pw = readFileSync(step.password_file, 'utf8').trim();
    } catch {
      return fail(`password_file ${step.password_file}: the daemon cannot read it`);
    }
    if (!pw || /[\r\n]/.test(pw)) return fail(`password_file ${step.password_file}: empty, or more than one line`);
    return { authorization: `Basic ${Buffer.from(`opencode:${pw}`).toString('base64')}` };
  }

  function call(method: 'GET' | 'POST', path: string, signal: AbortSignal, body?: unknown): Promise<Answer> {
    if (!u) return Promise.reject(new NotReached(`the step is invalid: ${invalid}`));
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { host: u.hostHeader, accept: 'application/json', ...auth() };
    if (payload !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) });
    const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const target = u;
    const owner = target.loopback === null ? null : opts.listenerOwner?.(target.loopback, target.port);
    if (owner?.kind === 'other')
      return Promise.reject(new NotReached(`port ${target.port} is held by uid ${owner.uid}, another user, not opencode: nothing was sent (no password, no wake text)`));
    return new Promise((resolve, reject) => {
      const req = request({ host: target.loopback ?? u.hostname, servername: target.hostname, port: target.port, method, path, headers, signal, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_BODY) req.destroy(new Error(`answer over ${MAX_BODY} bytes`));
          else chunks.push(c);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : null;
          } catch {
            /* kept as text */
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
      // The socket's timeout is per idle gap; a server trickling bytes would hold the wake forever.
      const whole = setTimeout(() => req.destroy(new Error(`no whole answer in ${timeoutMs} ms`)), timeoutMs);
      req.on('close', () => clearTimeout(whole));
      req.on('error', reject);
      req.end(payload);
    });
  }

  const q = (dir: string | null): string => (dir ? `?directory=${encodeURIComponent(dir)}` : '');
  const refused = (a: Answer, what: string): never => {
    if (a.status === 401) return fail(`opencode at ${step.url} refused ${what}: 401 (set password_file to a file holding its OPENCODE_SERVER_PASSWORD)`);
    const msg = typeof a.body === 'object' && a.body !== null ? JSON.stringify(a.body).slice(0, 200) : String(a.body).slice(0, 200);
    return fail(`opencode at ${step.url} answered ${what} with ${a.status}: ${msg}`);
  };

  /** The newest top-level session of the directory (no reported id to go by). */
  async function newest(dir: string | null, signal: AbortSignal): Promise<string> {
    const a = await call('GET', `/session${q(dir)}`, signal);
    if (a.status !== 200 || !Array.isArray(a.body)) return refused(a, 'the session list');
    const top = (a.body as { id?: unknown; parentID?: unknown; time?: { updated?: unknown } }[])
      .filter((s): s is { id: string; time?: { updated?: unknown } } => typeof s.id === 'string' && SESSION_ID.test(s.id) && s.parentID === undefined)
      .sort((x, y) => Number(y.time?.updated ?? 0) - Number(x.time?.updated ?? 0));
    return top[0]?.id ?? fail(`opencode at ${step.url} holds no session${dir ? ` in ${dir}` : ''}`);
  }

  return {
    kind: 'opencode',
    async wake(req: WakeRequest, signal: AbortSignal): Promise<WakeResult> {
      try {
        const s = req.session;
        if (s === null) return fail('no session on record for this account: no opencode session to wake');
        if (s.provider !== null && s.provider !== 'opencode') return fail(`session ${s.id} is not an opencode session (provider ${s.provider})`);
        const id = s.providerSessionId ?? (await newest(s.cwd, signal));
        if (!SESSION_ID.test(id)) return fail(`session ${s.id} names ${JSON.stringify(id)}, which is no opencode session id`);
        const info = await call('GET', `/session/${id}${q(s.cwd)}`, signal);
        if (info.status === 404) return fail(`opencode at ${step.url} does not hold session ${id} (another server, or the session was deleted)`);
        if (info.status !== 200) return refused(info, `GET /session/${id}`);
        const dir = (info.body as { directory?: unknown } | null)?.directory;
        const where = typeof dir === 'string' && dir ? dir : s.cwd;
        const status = await call('GET', `/session/status${q(where)}`, signal).catch(() => null);
        const busy = (status?.body as Record<string, { type?: string }> | null)?.[id]?.type === 'busy';
        const sent = await call('POST', `/session/${id}/prompt_async${q(where)}`, signal, { parts: [{ type: 'text', text: req.text }] });
        if (sent.status !== 204 && sent.status !== 200) return refused(sent, 'prompt_async');
        return { ok: true, detail: `prompt_async accepted by opencode at ${step.url} for ${id} (${busy ? 'busy: given after its running tool' : 'idle: a turn starts'})` };
      } catch (err) {
        if (err instanceof NotReached) return { ok: false, detail: err.message };
        if (signal.aborted) return { ok: false, detail: 'aborted' };
        return { ok: false, detail: `opencode at ${step.url}: ${err instanceof Error ? err.message : String(err)}` };
      }
    },
  };
}
