// Who is here: the caller's own card (whoami), what it declares (status), and the directory of
// accounts, sessions and rooms (peers: live sessions by their printed address unless detail).
import { MailError } from '../wire/errors.js';
import type * as W from '../wire/ops.js';
import type { SessionRecord, Store } from '../store/types.js';
import { aliasName } from './names.js';
import { presentCard, presentPeer, presentSession } from './present.js';
import type { SessionBook } from './sessions.js';
import type { ShortAddresses } from './short-address.js';
import { callerAddress, type Caller } from './mail-engine.js';

export interface DirectoryDeps {
  store: Store;
  sessions: SessionBook;
  addresses: ShortAddresses;
  /** The account's e-mail address, or null without a mail domain (email-book.ts). */
  emailOf(account: string): string | null;
}

export class Directory {
  constructor(private d: DirectoryDeps) {}

  /** The aliases of the caller's lineage. */
  private async aliasesOf(s: SessionRecord | null): Promise<string[]> {
    if (!s) return [];
    return (await this.d.store.namesOf(s.account)).filter((n) => n.kind === 'alias' && n.lineage === s.lineage).map((n) => n.name);
  }

  async whoami(c: Caller): Promise<W.WhoamiResponse> {
    const email = c.account.kind === 'service' ? null : this.d.emailOf(c.account.id);
    return {
      address: callerAddress(c),
      account: c.account.id,
      label: c.account.label,
      kind: c.account.kind,
      session: c.session?.id ?? null,
      slug: c.session?.slug ?? null,
      aliases: await this.aliasesOf(c.session),
      rooms: (await this.d.store.roomsOf(c.account.id)).map((r) => `#${r}`),
      card: presentCard(c.session),
      ...(email ? { email } : {}),
    };
  }

  async status(c: Caller, req: W.StatusRequest): Promise<W.StatusResponse> {
    const session = c.session;
    if (!session) throw new MailError('permission_denied', 'only an attested session has a card', { need: 'session' });
    // Both names are checked before either changes anything.
    const alias = req.alias === undefined ? undefined : aliasName(req.alias);
    const unalias = req.unalias === undefined ? undefined : aliasName(req.unalias, 'unalias');
    if (alias !== undefined && (await this.d.store.addAlias(c.account.id, session.lineage, alias)) === 'taken') {
      const owner = await this.d.store.resolveName(c.account.id, alias);
      throw new MailError('already_exists', `${c.account.id}/${alias} is taken by another session`, { field: 'alias', kind: owner?.kind ?? 'alias' });
    }
    if (unalias !== undefined) await this.d.store.removeAlias(c.account.id, session.lineage, unalias);
    if (alias !== undefined || unalias !== undefined) this.d.addresses.clear();
    const d = { ...session.declared };
    if (req.working_on !== undefined) d.workingOn = req.working_on || undefined;
    if (req.role !== undefined) d.role = req.role || undefined;
    if (req.parent !== undefined) d.parent = req.parent || undefined;
    const changed = req.working_on !== undefined || req.role !== undefined || req.parent !== undefined;
    const rec = changed ? await this.d.store.setDeclared(c.account.id, session.id, d) : session;
    if (rec) {
      this.d.sessions.remember(rec);
      c.session = rec;
    }
    return { address: callerAddress(c), slug: (rec ?? session).slug, aliases: await this.aliasesOf(rec ?? session), card: presentCard(rec ?? session) };
  }

  async directory(c: Caller, req: W.DirectoryRequest = {}): Promise<W.DirectoryResponse> {
    const [accounts, sessions, rooms, mine, names] = await Promise.all([
      this.d.store.listAccounts(),
      this.d.store.listSessions(),
      this.d.store.listRooms(),
      this.d.store.roomsOf(c.account.id),
      this.d.store.listNames(),
    ]);
    const aliases = new Map<string, string[]>();
    for (const n of names) if (n.kind === 'alias') aliases.set(`${n.account}/${n.lineage}`, [...(aliases.get(`${n.account}/${n.lineage}`) ?? []), n.name]);
    const byAccount = new Map<string, W.DirectoryResponse['accounts'][number]['sessions']>();
    const listed = sessions.filter((s) => req.include_ended || this.d.sessions.isLive(s));
    // Without detail a session is its printed address (the one mail shows and `to` takes back).
    const printed = req.detail
      ? new Map<string, string>()
      : await this.d.addresses.printAll(
          listed.map((s) => `${s.account}/${s.id}`),
          listed,
        );
    for (const s of listed) {
      const live = this.d.sessions.isLive(s);
      const list = byAccount.get(s.account) ?? [];
      const own = aliases.get(`${s.account}/${s.lineage}`) ?? [];
      const full = `${s.account}/${s.id}`;
      list.push(req.detail ? presentSession(s, live, own) : presentPeer(s, live, printed.get(full) ?? full));
      byAccount.set(s.account, list);
    }
    return {
      accounts: accounts.map((a) => ({
        id: a.id,
        ...(a.label !== a.id ? { label: a.label } : {}),
        ...(a.kind !== 'agent' ? { kind: a.kind } : {}),
        sessions: byAccount.get(a.id) ?? [],
      })),
      rooms: rooms.map((r) => ({ name: r.name, member: mine.includes(r.name) })),
    };
  }
}
