// Contact policies: who may write to an account (docs/teams.md, "Contact policies"). Each account
// has one, set by itself or the operator: open (the default), contacts_only, block_all. deliver
// (mail-post.ts) asks admit() before it stores anything, so send, reply, tasks, approvals and team
// copies all follow it; a refusal is contact_refused {recipient, policy} and stores nothing.
// Contact requests (a refused send held until the recipient answers) are contact-requests.ts.
import { MailError } from '../wire/errors.js';
import type * as CT from '../wire/contacts.js';
import type * as W from '../wire/ops.js';
import { isKeyOfAccount, keyOfAccount, type AccountRecord, type StoredMessage } from '../store/types.js';
import type { Recipient } from './recipients.js';
import { sentBy } from './incarnation.js';
import { MAILBOX_ACCOUNT } from './timers.js';
import { ContactRequests, type RequestDeps } from './contact-requests.js';
import type { Caller } from './mail-engine.js';
import type { TaskMark } from './tasks.js';

export type ContactDeps = RequestDeps;

const iso = (ms: number): string => new Date(ms).toISOString();

function refusal(recipient: string, policy: CT.ContactPolicy): MailError {
  const who =
    policy === 'block_all' ? 'people only (block_all)' : 'its contacts, the members of its rooms and teams, and people only (contacts_only); send with request_contact to ask it';
  return new MailError('contact_refused', `${recipient} takes mail from ${who}`, { recipient, policy });
}

export class ContactBook {
  private requests: ContactRequests;

  constructor(private d: ContactDeps) {
    this.requests = new ContactRequests(d);
  }

  /** Throws contact_refused when the recipient's policy refuses the caller. In order:
   *  - room mail is never subject to a policy: membership (or an open room) is the consent;
   *  - mail to oneself, from a person (kind human), from `mailbox` (reminders, returned mail) and
   *    what the recipient consented to (its contact request, held mail it accepted) always pass;
   *  - open admits everyone;
   *  - an answer to a message the recipient itself sent to the caller (its own mail or session, or
   *    a room that is not an everyone-room) passes: an agent can always answer mail it was sent;
   *  - contacts_only admits the recipient's contacts and those sharing a room or team with it that
   *    is not an everyone-room (everyone shares those, so they would make the policy mean nothing);
   *  - block_all admits nobody else. */
  async admit(c: Caller, target: Recipient, parent: StoredMessage | null, task: TaskMark | null = null): Promise<void> {
    if (target.key.startsWith('r:')) return;
    const r = target.accounts[0];
    if (r === undefined || r === c.account.id) return;
    if (c.account.kind === 'human' || c.account.id === MAILBOX_ACCOUNT || this.requests.consented(c)) return;
    // A change of a task that exists: its creation passed the policy, and its parties must go on
    // hearing of it (a cancel must not be refused after the task row changed).
    if (task && task.version > 1) return;
    // resolveRecipient read the account already: the policy costs no second read.
    const recipient = target.account ?? (await this.d.store.getAccount(r));
    if (!recipient || recipient.contactPolicy === 'open') return;
    if (parent && sentBy(recipient, parent) && (await this.sentToCaller(parent, c))) return;
    if (recipient.contactPolicy === 'contacts_only' && (await this.knows(recipient.id, c.account.id))) return;
    throw refusal(recipient.id, recipient.contactPolicy);
  }

  /** Whether the account's policy takes the caller's mail (a leader adding it to a team: teammates
   *  are known to contacts_only, so the addition must not be the way past the policy). */
  async admitsMail(c: Caller, account: string): Promise<void> {
    const a = await this.d.store.getAccount(account);
    if (a) await this.admit(c, { key: keyOfAccount(a.id), address: a.id, redirected: false, accounts: [a.id], account: a }, null);
  }

  private async sentToCaller(m: StoredMessage, c: Caller): Promise<boolean> {
    if (isKeyOfAccount(m.toKey, c.account.id)) return true;
    if (!m.toKey.startsWith('r:')) return false;
    const room = await this.d.store.getRoom(m.toKey.slice(2));
    return room !== null && !room.everyone && room.members.includes(c.account.id);
  }

  /** A contact of the recipient, or a member of one of its rooms or teams (not everyone-rooms). */
  private async knows(recipient: string, sender: string): Promise<boolean> {
    if (await this.d.store.hasContact(recipient, sender)) return true;
    const [mine, theirs] = await Promise.all([this.d.store.roomsOf(recipient), this.d.store.roomsOf(sender)]);
    const other = new Set(theirs);
    for (const name of mine) {
      if (!other.has(name)) continue;
      const room = await this.d.store.getRoom(name);
      if (room && !room.everyone) return true;
    }
    return false;
  }

  /** A refused send with request_contact: held for a contact request (contact-requests.ts). */
  hold(c: Caller, req: W.SendRequest, parent: StoredMessage | null, refused: MailError): Promise<W.SendResponse> {
    return this.requests.hold(c, req, parent, refused);
  }

  async list(c: Caller): Promise<CT.ContactsListResponse> {
    const me = await this.self(c);
    const [contacts, incoming, outgoing] = await Promise.all([this.d.store.listContacts(me.id), this.requests.incoming(me), this.requests.outgoing(me)]);
    return { policy: me.contactPolicy, contacts: contacts.map((x) => ({ account: x.contact, added_at: iso(x.addedAt) })), incoming, outgoing };
  }

  /** Adds a contact; a request of its is accepted with it: the held mail is delivered now (in the
   *  order it was sent) and the request goes. accept is the same operation, named for answering. */
  async add(c: Caller, req: CT.ContactRequest): Promise<CT.ContactAddResponse> {
    const me = await this.self(c);
    if (req.account === me.id) throw new MailError('malformed', 'you always reach yourself; a contact is another account', { field: 'account', reason: 'self' });
    // The contact first: a send racing this one is then admitted, or delivers what it held itself.
    if ((await this.d.store.addContact(me.id, req.account, this.d.clock.now())) === 'no_account')
      throw new MailError('unknown_participant', `no account ${req.account}`, { participant: req.account });
    const delivered = await this.requests.release(me, req.account);
    // What another caller is still delivering keeps the request listed until it is done.
    await this.requests.forgetAnswered(me.id, req.account);
    return { ok: true, delivered };
  }

  accept(c: Caller, req: CT.ContactRequest): Promise<CT.ContactAddResponse> {
    return this.add(c, req);
  }

  async remove(c: Caller, req: CT.ContactRequest): Promise<{ ok: true }> {
    const me = await this.self(c);
    await this.d.store.removeContact(me.id, req.account);
    return { ok: true };
  }

  /** The held mail goes back to its sender once; the pair's further requests are refused until
   *  this account adds the sender. Declining again returns nothing. */
  async decline(c: Caller, req: CT.ContactRequest): Promise<CT.ContactDeclineResponse> {
    const me = await this.self(c);
    return { ok: true, returned: await this.requests.decline(me, req.account) };
  }

  /** The caller's own policy. */
  async setPolicy(c: Caller, req: CT.PolicySetRequest): Promise<CT.PolicyOut> {
    return this.store(c.account.id, req.policy);
  }

  /** The operator sets any account's policy. */
  async adminSetPolicy(c: Caller, req: CT.AdminPolicySetRequest): Promise<CT.PolicyOut> {
    if (!c.account.permissions.operator) throw new MailError('permission_denied', 'this needs the operator credential', { need: 'operator' });
    return this.store(req.account, req.policy);
  }

  private async store(account: string, policy: CT.ContactPolicy): Promise<CT.PolicyOut> {
    // Reminders and returned mail come from mailbox; nothing is sent to it that it could refuse.
    if (account === MAILBOX_ACCOUNT && policy !== 'open') throw new MailError('malformed', 'mailbox is reserved: its policy stays open', { field: 'account', reason: 'reserved' });
    if (!(await this.d.store.setContactPolicy(account, policy))) throw new MailError('unknown_participant', `no account ${account}`, { participant: account });
    return { account, policy };
  }

  /** The caller's account as stored now (its policy may have changed since it was verified). */
  private async self(c: Caller): Promise<AccountRecord> {
    const me = await this.d.store.getAccount(c.account.id);
    if (!me || me.bornSeq !== c.account.bornSeq) throw new MailError('unknown_participant', `no account ${c.account.id}`, { participant: c.account.id });
    return me;
  }
}
