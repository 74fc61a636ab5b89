// Contact policies and contact requests (docs/teams.md). Being worked on: issue #17.
import { MailError } from '../wire/errors.js';
import type * as CT from '../wire/contacts.js';
import type * as W from '../wire/ops.js';
import type { StoredMessage } from '../store/types.js';
import type { Recipient } from './recipients.js';
import type { Caller } from './mail-engine.js';

const todo = (): never => {
  throw new MailError('not_supported', 'contact policies are not built yet', { field: 'policy' });
};

export class ContactBook {
  /** Throws contact_refused when the recipient's policy refuses the caller. */
  admit(_c: Caller, _target: Recipient, _parent: StoredMessage | null): Promise<void> {
    return Promise.resolve();
  }
  /** A refused send with request_contact: held for a contact request. */
  hold(_c: Caller, _req: W.SendRequest, _parent: StoredMessage | null, refused: Error): Promise<W.SendResponse> {
    return Promise.reject(refused);
  }
  list(_c: Caller): Promise<CT.ContactsListResponse> {
    return Promise.resolve(todo());
  }
  add(_c: Caller, _req: CT.ContactRequest): Promise<CT.ContactAddResponse> {
    return Promise.resolve(todo());
  }
  remove(_c: Caller, _req: CT.ContactRequest): Promise<{ ok: true }> {
    return Promise.resolve(todo());
  }
  accept(_c: Caller, _req: CT.ContactRequest): Promise<CT.ContactAddResponse> {
    return Promise.resolve(todo());
  }
  decline(_c: Caller, _req: CT.ContactRequest): Promise<CT.ContactDeclineResponse> {
    return Promise.resolve(todo());
  }
  /** The caller's own policy. */
  setPolicy(_c: Caller, _req: CT.PolicySetRequest): Promise<CT.PolicyOut> {
    return Promise.resolve(todo());
  }
  /** The operator sets any account's policy. */
  adminSetPolicy(_c: Caller, _req: CT.AdminPolicySetRequest): Promise<CT.PolicyOut> {
    return Promise.resolve(todo());
  }
}
