// Helpers for the browser door's tests: a person's account, a login, and raw /web/api calls.
import { raw, type TestDaemon } from '../support/test-daemon.js';

export const PASSWORD = 'correct horse battery';

export async function createPerson(d: TestDaemon, id: string, o: { operator?: boolean; display_name?: string; password?: string } = {}): Promise<void> {
  await d.operator.call('/admin/user/create', {
    id,
    password: o.password ?? PASSWORD,
    ...(o.display_name ? { display_name: o.display_name } : {}),
    ...(o.operator ? { operator: true } : {}),
  });
}

export interface WebAnswer {
  status: number;
  json: any;
  headers: Headers;
}

/** POST /web/api/NAME the way the page does (same Origin, JSON), with control over every part. */
export async function webPost(
  url: string,
  name: string,
  o: { cookie?: string; csrf?: string; body?: unknown; headers?: Record<string, string>; origin?: string | null } = {},
): Promise<WebAnswer> {
  const headers: Record<string, string> = o.origin === null ? {} : { origin: o.origin ?? url };
  if (o.cookie) headers.cookie = o.cookie;
  if (o.csrf !== undefined) headers['x-m4a-csrf'] = o.csrf;
  return raw(url, `/web/api/${name}`, { headers: { ...headers, ...o.headers }, body: typeof o.body === 'string' ? o.body : JSON.stringify(o.body ?? {}) });
}

export interface Login {
  cookie: string;
  csrf: string;
  setCookie: string;
}

export async function login(url: string, account: string, password = PASSWORD): Promise<Login> {
  const r = await webPost(url, 'login', { body: { account, password } });
  if (r.status !== 200) throw new Error(`login failed: ${r.status} ${JSON.stringify(r.json)}`);
  const setCookie = r.headers.get('set-cookie') ?? '';
  return { cookie: setCookie.split(';')[0]!, csrf: r.json.csrf as string, setCookie };
}

export const call = (url: string, l: Login, name: string, body: unknown = {}): Promise<WebAnswer> => webPost(url, name, { cookie: l.cookie, csrf: l.csrf, body });
