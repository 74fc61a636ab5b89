// The browser door never makes an operator credential. An operator secret may set wake chains, and a
// wake chain runs programs, so "the browser cannot set wake chains" only holds if the browser also
// cannot obtain such a secret: it creates no account or person with the operator permission, and
// rotates or removes no account that has it (a rotate would hand out its secret; a remove would take
// the local operator's credential away). Operators are made on the machine, with the data
// directory's operator token (`m4a admin account add --operator`, `m4a user create --operator`).
import { MailError } from '../../wire/errors.js';
import type { MailEngine } from '../../engine/mail-engine.js';

const local = (what: string, field: string): MailError =>
  new MailError('permission_denied', `the browser cannot ${what}: operators are made on the machine (m4a admin account add --operator, m4a user create --operator)`, {
    need: 'local',
    field,
  });

/** Throws `permission_denied {need: "local", field}` if operator route `sub` with this (parsed)
 *  input would create, hand out or take away an operator credential. */
export async function refuseOperatorEscalation(engine: MailEngine, sub: string, input: unknown): Promise<void> {
  const i = input as { id?: string; operator?: boolean; permissions?: { operator?: boolean } };
  if (sub === 'account/add' && i.permissions?.operator === true) throw local('create an account with the operator permission', 'permissions.operator');
  if (sub === 'user/create' && i.operator === true) throw local('create a person with the operator permission', 'operator');
  if ((sub === 'account/rotate' || sub === 'account/remove') && typeof i.id === 'string') {
    const acc = await engine.store.getAccount(i.id);
    if (acc?.permissions.operator) throw local(`${sub === 'account/rotate' ? 'rotate the secret of' : 'remove'} an account with the operator permission`, 'id');
  }
}
