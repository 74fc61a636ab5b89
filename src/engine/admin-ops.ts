// The operator registry: accounts, rooms, memberships, listeners. Operator callers only.
import { MailError } from '../wire/errors.js';
import type * as A from '../wire/admin.js';
import { type NewAccount, type Permissions } from '../store/types.js';
import { digestSecret } from './credentials.js';
import { iso } from './present.js';
import { checkListenerUrl } from './listener-url.js';
import { MAILBOX_ACCOUNT } from './timers.js';
import { accountSweep, roomSweep } from './incarnation.js';
import type { Caller, MailEngine } from './mail-engine.js';
import type * as WW from '../wire/web.js';
import type { WebAuth } from './web-auth.js';
import type * as IM from '../wire/import-omp-mail.js';
import { OmpMailImport } from './import-omp-mail.js';
import type * as IMX from '../wire/import-mail.js';
import { MailImport } from './import-mail.js';

export const OPERATOR_ACCOUNT = 'operator';

const DEFAULT_PERMS: Permissions = { send: true, read: true, urgent: false, operator: false };

function presentAccount(a: NewAccount): A.AccountOut {
  return { id: a.id, kind: a.kind, label: a.label, permissions: { ...a.permissions }, bind_provider: a.bindProvider, created_at: iso(a.createdAt) };
}

export class AdminOps {
  private ompMail: OmpMailImport | undefined;
  private mailImport: MailImport | undefined;

  constructor(
    private e: MailEngine,
    /** Passwords and browser logins of human accounts (absent: the web door is off). */
    private web?: WebAuth,
  ) {}

  private webAuth(): WebAuth {
    if (!this.web) throw new MailError('unknown_route', 'this daemon has no browser door');
    return this.web;
  }

  private operatorOnly(c: Caller): void {
    if (!c.account.permissions.operator) throw new MailError('permission_denied', 'this needs the operator credential', { need: 'operator' });
  }

  async accountAdd(c: Caller, req: A.AccountAddRequest): Promise<{ account: A.AccountOut; secret: string }> {
    this.operatorOnly(c);
    return this.createAccount(req);
  }

  /** Also used at first start to create the operator itself. */
  async createAccount(req: A.AccountAddRequest): Promise<{ account: A.AccountOut; secret: string }> {
    const secret = this.e.newSecret();
    const rec: NewAccount = {
      id: req.id,
      kind: req.kind ?? 'agent',
      label: req.label ?? req.id,
      permissions: { ...DEFAULT_PERMS, ...req.permissions },
      bindProvider: req.bind_provider ?? null,
      secretDigest: digestSecret(secret),
      createdAt: this.e.clock.now(),
    };
    // Whatever an earlier build left under the name (it kept records on removal) goes at creation.
    if ((await this.e.store.addAccount(rec, accountSweep(rec.id))) === 'exists') throw new MailError('already_exists', `account ${req.id} exists`, { field: 'id' });
    return { account: presentAccount(rec), secret };
  }

  async accountRotate(c: Caller, id: string): Promise<{ account: A.AccountOut; secret: string }> {
    this.operatorOnly(c);
    return this.rotate(id);
  }

  async rotate(id: string): Promise<{ account: A.AccountOut; secret: string }> {
    const acc = await this.e.store.getAccount(id);
    if (!acc) throw new MailError('unknown_participant', `no account ${id}`, { participant: id });
    const secret = this.e.newSecret();
    await this.e.store.setAccountSecret(id, digestSecret(secret));
    this.e.credentialsChanged();
    return { account: presentAccount(acc), secret };
  }

  /** Removes the account and deletes its mail, wake chains, timers, sessions and logins: an account
   *  added again under the name is a new participant (docs/identity.md). */
  async accountRemove(c: Caller, id: string): Promise<A.RemovedResponse> {
    this.operatorOnly(c);
    if (id === c.account.id) throw new MailError('malformed', 'the operator cannot remove itself', { field: 'id', reason: 'self' });
    if (id === MAILBOX_ACCOUNT) throw new MailError('malformed', 'mailbox is reserved: reminders come from it', { field: 'id', reason: 'reserved' });
    if (await this.e.store.getAccount(id)) {
      await this.e.tasks.pool.releaseHeldBy(id);
      // The removal ends its team memberships too: each is recorded, as every change of a team is.
      for (const name of await this.e.store.roomsOf(id)) {
        const r = await this.e.store.getRoom(name);
        if (r?.team) await this.e.store.removeMember(name, id, { room: name, at: this.e.clock.now(), by: c.account.id, action: 'member.remove', account: id, capability: null });
      }
    }
    const removed = await this.e.store.removeAccount(id, accountSweep(id));
    if (!removed) throw new MailError('unknown_participant', `no account ${id}`, { participant: id });
    this.e.accountRemoved(id);
    return { ok: true, deleted_messages: removed.messages };
  }

  async accountList(c: Caller): Promise<{ accounts: A.AccountOut[] }> {
    this.operatorOnly(c);
    return { accounts: (await this.e.store.listAccounts()).map(presentAccount) };
  }

  async roomAdd(c: Caller, name: string, opts: { everyone?: boolean; open?: boolean } = {}): Promise<{ ok: true }> {
    this.operatorOnly(c);
    if ((await this.e.store.addRoom(name, this.e.clock.now(), opts)) === 'exists') throw new MailError('already_exists', `room #${name} exists`, { field: 'name' });
    if (opts.everyone) this.e.roomsChanged();
    return { ok: true };
  }

  /** Removes the room and deletes its mail: a room created again under the name starts empty. */
  async roomRemove(c: Caller, name: string): Promise<A.RemovedResponse> {
    this.operatorOnly(c);
    const removed = await this.e.store.removeRoom(name, roomSweep());
    if (!removed) throw new MailError('unknown_room', `no room #${name}`, { room: name });
    // Parked readers must stop watching the room at once (they re-query with their new rooms).
    this.e.roomsChanged();
    return { ok: true, deleted_messages: removed.messages };
  }

  /** Open: anyone may post; closed (the default): members only. */
  async roomSet(c: Caller, name: string, open: boolean): Promise<{ ok: true }> {
    this.operatorOnly(c);
    if (!(await this.e.store.setRoomOpen(name, open))) throw new MailError('unknown_room', `no room #${name}`, { room: name });
    return { ok: true };
  }

  async roomList(c: Caller): Promise<A.RoomListResponse> {
    this.operatorOnly(c);
    return { rooms: (await this.e.store.listRooms()).map((r) => ({ name: r.name, everyone: r.everyone, open: r.open, members: r.members })) };
  }

  async memberAdd(c: Caller, room: string, account: string): Promise<{ ok: true }> {
    this.operatorOnly(c);
    // A team's membership changed through the room commands is recorded like any team change.
    const team = (await this.e.store.getRoom(room))?.team === true;
    const r = await this.e.store.addMember(room, account, team ? { room, at: this.e.clock.now(), by: c.account.id, action: 'member.add', account, capability: null } : undefined);
    if (r === 'no_room') throw new MailError('unknown_room', `no room #${room}`, { room });
    if (r === 'no_account') throw new MailError('unknown_participant', `no account ${account}`, { participant: account });
    this.e.roomsChanged(account);
    return { ok: true };
  }

  async memberRemove(c: Caller, room: string, account: string): Promise<{ ok: true }> {
    this.operatorOnly(c);
    const r = await this.e.store.getRoom(room);
    if (!r) throw new MailError('unknown_room', `no room #${room}`, { room });
    if (r.everyone) throw new MailError('malformed', `#${room} includes every account; remove the room instead`, { field: 'room', reason: 'everyone room' });
    await this.e.store.removeMember(room, account, r.team ? { room, at: this.e.clock.now(), by: c.account.id, action: 'member.remove', account, capability: null } : undefined);
    this.e.roomsChanged(account);
    // A member who leaves gives back the room's pooled tasks it holds.
    await this.e.tasks.pool.releaseHeldBy(account, room);
    return { ok: true };
  }

  async listenerSet(c: Caller, account: string, url: string): Promise<{ ok: true }> {
    this.operatorOnly(c);
    const checked = checkListenerUrl(url);
    if (!(await this.e.store.setListener(account, checked.href))) throw new MailError('unknown_participant', `no account ${account}`, { participant: account });
    return { ok: true };
  }

  /** Every account's listener URL (the browser's operator page). */
  async listenerList(c: Caller): Promise<Record<string, string>> {
    this.operatorOnly(c);
    const out: Record<string, string> = {};
    for (const a of await this.e.store.listAccounts()) {
      const url = await this.e.store.getListener(a.id);
      if (url) out[a.id] = url;
    }
    return out;
  }

  async listenerRemove(c: Caller, account: string): Promise<{ ok: true }> {
    this.operatorOnly(c);
    await this.e.store.removeListener(account);
    return { ok: true };
  }

  /** A person: a human account (send and read) with a password for the browser; no secret is shown. */
  async userCreate(c: Caller, req: WW.UserCreateRequest): Promise<{ account: A.AccountOut }> {
    this.operatorOnly(c);
    const web = this.webAuth();
    const { account } = await this.createAccount({
      id: req.id,
      kind: 'human',
      label: req.display_name ?? req.id,
      permissions: { send: true, read: true, urgent: false, operator: !!req.operator },
    });
    try {
      await web.setPassword(req.id, req.password);
    } catch (err) {
      await this.e.store.removeAccount(req.id).catch(() => undefined);
      throw err;
    }
    return { account };
  }

  async userPassword(c: Caller, req: WW.UserPasswordRequest): Promise<{ ok: true }> {
    this.operatorOnly(c);
    await this.webAuth().setPassword(req.id, req.password);
    return { ok: true };
  }

  /** omp-mail's sessions and mail into an agent account (import-omp-mail.ts). */
  async importOmpMail(c: Caller, req: IM.ImportOmpMailRequest): Promise<IM.ImportOmpMailResponse> {
    this.operatorOnly(c);
    const e = this.e;
    this.ompMail ??= new OmpMailImport({
      store: e.store,
      clock: e.clock,
      hostId: e.hostId,
      printAddresses: (compacts) => e.printAddresses(compacts),
      namesChanged: () => e.namesChanged(),
    });
    return this.ompMail.run(req);
  }

  /** Another mailbox's mail and timers (import-mail.ts); the CLI made the accounts and teams. */
  async importMail(c: Caller, source: IMX.MailImportSource, req: IMX.ImportMailRequest): Promise<IMX.ImportMailResponse> {
    this.operatorOnly(c);
    const e = this.e;
    this.mailImport ??= new MailImport({ store: e.store, clock: e.clock, timersChanged: () => void e.tickTimers() });
    return this.mailImport.run(source, req);
  }

  async userRevokeSessions(c: Caller, id: string): Promise<{ revoked: number }> {
    this.operatorOnly(c);
    return { revoked: await this.webAuth().revokeAll(id) };
  }
}
