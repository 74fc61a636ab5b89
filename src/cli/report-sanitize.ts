// What a support report may show of a string: every name, path, address, id and credential is
// replaced by a stable placeholder (account-1, path-2, secret-1 …), the same value by the same
// placeholder, so the report stays readable ("account-1 has no secret") and says nothing about
// whose mailbox it describes. Shapes are caught by pattern; names (accounts, labels, rooms,
// teams, slugs, aliases, the host and user) only by being registered first.

export type PlaceholderKind =
  'account' | 'label' | 'room' | 'team' | 'name' | 'host' | 'user' | 'path' | 'secret' | 'email' | 'url' | 'ip' | 'session' | 'message' | 'task' | 'approval' | 'lease' | 'id';

/** The id prefixes of the mailbox's objects (s-…, m-…) and what they are called. */
const ID_PREFIXES: Record<string, PlaceholderKind> = { s: 'session', m: 'message', t: 'task', a: 'approval', l: 'lease' };

/** Routes and well-known places keep their names: they are the program's, not the user's. */
const KEPT_PATHS = /^\/(mail|admin|web|mcp|health|metrics|a2a|dev\/null|proc|usr\/bin\/env)(\/|$)/;

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[?::1\]?|0\.0\.0\.0)$/i;

interface Rule {
  re: RegExp;
  /** The placeholder for a match, or null to keep it as it is. */
  to: (m: string, ...groups: string[]) => string | null;
}

export class Sanitizer {
  private known = new Map<string, string>();
  private counters = new Map<PlaceholderKind, number>();
  private names: { value: string; kind: PlaceholderKind }[] = [];
  private namePattern: RegExp | null = null;

  /** The placeholder for value (a new one the first time). */
  placeholder(kind: PlaceholderKind, value: string): string {
    const had = this.known.get(value);
    if (had !== undefined) return had;
    const n = (this.counters.get(kind) ?? 0) + 1;
    this.counters.set(kind, n);
    const p = `${kind}-${n}`;
    this.known.set(value, p);
    return p;
  }

  /** A name to replace wherever it stands as a word (an account "ops" never turns "operator" into
   *  "account-1rator"). Empty values are ignored. */
  name(kind: PlaceholderKind, value: string | null | undefined): void {
    if (!value || this.known.has(value) || this.names.some((x) => x.value === value)) return;
    this.names.push({ value, kind });
    this.namePattern = null;
  }

  private rules(): Rule[] {
    return [
      // Credentials first: a secret may contain anything the later rules look for.
      { re: /\bm4a_[A-Za-z0-9_-]{8,}/g, to: (m) => this.placeholder('secret', m) },
      { re: /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, to: (m, scheme) => `${scheme} ${this.placeholder('secret', m)}` },
      { re: /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, to: (m) => this.placeholder('secret', m) },
      { re: /\b(?:password|passwd|secret|token|api[_-]?key|authorization)\b["']?\s*[:=]\s*["']?[^\s"',}]+/gi, to: (m) => `${m.split(/[:=]/)[0]}=${this.placeholder('secret', m)}` },
      // URLs: the loopback ones are the daemon's own (kept, minus any userinfo); the others are someone's.
      {
        re: /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>()]*[^\s"'<>().,;:]/gi,
        to: (m) => {
          const host = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/]*@)?(\[[^\]]*\]|[^:/?#]*)/i.exec(m)?.[1] ?? '';
          return LOOPBACK.test(host) && !/^[a-z][a-z0-9+.-]*:\/\/[^/]*@/i.test(m) ? null : this.placeholder('url', m);
        },
      },
      { re: /\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+\b/g, to: (m) => this.placeholder('email', m) },
      // Absolute and home-relative paths, whole (a name inside one goes with it).
      {
        re: /(?<![\w/.~-])(~?\/(?!\/)[^\s"'`,;()<>[\]{}|]+)/g,
        to: (m) => (KEPT_PATHS.test(m) || m === '/' ? null : this.placeholder('path', m)),
      },
      { re: /(?<![\w.:])((?:\d{1,3}\.){3}\d{1,3})(?::\d+)?(?![\w.])/g, to: (m, ip) => (LOOPBACK.test(ip) ? null : this.placeholder('ip', m)) },
      // IPv6: with a :: or eight groups (a time of day, 12:30:45, is neither).
      {
        re: /(?<![\w:])(?=[0-9a-f:]*::|(?:[0-9a-f]{1,4}:){7})(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}(?![\w:])/gi,
        to: (m) => (LOOPBACK.test(m) ? null : this.placeholder('ip', m)),
      },
      // The mailbox's ids: a prefix letter, a dash, a run with a digit in it.
      {
        re: /(?<![\w-])([smtal])-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{6,}/g,
        to: (m, prefix) => this.placeholder(ID_PREFIXES[prefix] ?? 'id', m),
      },
      // Long runs of hex or base64: digests, keys, tokens of some other program.
      { re: /(?<![A-Za-z0-9])[0-9a-f]{24,}(?![A-Za-z0-9])/gi, to: (m) => this.placeholder('secret', m) },
      { re: /(?<![A-Za-z0-9+/_-])(?=[A-Za-z0-9+/_-]*\d)(?=[A-Za-z0-9+/_-]*[A-Za-z])[A-Za-z0-9+/_-]{32,}={0,2}/g, to: (m) => this.placeholder('secret', m) },
      // UUIDs (provider session ids).
      { re: /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, to: (m) => this.placeholder('id', m) },
    ];
  }

  private namesRe(): RegExp | null {
    if (this.names.length === 0) return null;
    if (!this.namePattern) {
      const alts = [...this.names].sort((a, b) => b.value.length - a.value.length).map((x) => x.value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
      this.namePattern = new RegExp(`(?<![A-Za-z0-9_]|[a-z]-)(?:${alts.join('|')})(?![A-Za-z0-9_]|-\\d)`, 'gi');
    }
    return this.namePattern;
  }

  /** s with everything private replaced. */
  clean(s: string): string {
    let out = s;
    for (const r of this.rules()) out = out.replace(r.re, (m: string, ...g: unknown[]) => r.to(m, ...g.filter((x): x is string => typeof x === 'string')) ?? m);
    const names = this.namesRe();
    if (names) {
      out = out.replace(names, (m) => {
        const hit = this.names.find((x) => x.value.toLowerCase() === m.toLowerCase());
        return hit ? this.placeholder(hit.kind, hit.value) : m;
      });
    }
    return out;
  }

  /** Every value this report replaced (for a test: none of them may appear in its text). */
  replaced(): string[] {
    return [...this.known.keys()];
  }
}
