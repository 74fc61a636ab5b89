// Browser-door calls from a chosen loopback source address (127.0.0.x): the daemon sees each as its
// own client, as it would see hosts on a LAN. The page's headers (same Origin, JSON, the CSRF token).
import { request } from 'node:http';

export interface PeerAnswer {
  status: number;
  json: any;
  setCookie: string | undefined;
}

export function webFrom(
  url: string,
  name: string,
  o: { from?: string; cookie?: string; csrf?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<PeerAnswer> {
  const u = new URL(url);
  const body = Buffer.from(JSON.stringify(o.body ?? {}), 'utf8');
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent: false,
        host: u.hostname,
        port: u.port,
        path: `/web/api/${name}`,
        method: 'POST',
        ...(o.from ? { localAddress: o.from } : {}),
        headers: {
          host: u.host,
          origin: url,
          'content-type': 'application/json',
          'content-length': String(body.length),
          ...(o.cookie ? { cookie: o.cookie } : {}),
          ...(o.csrf !== undefined ? { 'x-m4a-csrf': o.csrf } : {}),
          ...o.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          const sc = res.headers['set-cookie'];
          resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : null, setCookie: Array.isArray(sc) ? sc[0] : sc });
        });
        res.on('error', reject);
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`no answer from /web/api/${name} within 10 s (a hang)`)), 10_000);
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.end(body);
  });
}

export interface PeerLogin {
  cookie: string;
  csrf: string;
}

export async function loginFrom(url: string, from: string, account: string, password: string): Promise<PeerLogin> {
  const r = await webFrom(url, 'login', { from, body: { account, password } });
  if (r.status !== 200) throw new Error(`login of ${account} from ${from} failed: ${r.status} ${JSON.stringify(r.json)}`);
  return { cookie: r.setCookie!.split(';')[0]!, csrf: r.json.csrf as string };
}

export const callAs = (url: string, l: PeerLogin, name: string, body: unknown = {}, from?: string): Promise<PeerAnswer> =>
  webFrom(url, name, { cookie: l.cookie, csrf: l.csrf, body, ...(from ? { from } : {}) });
