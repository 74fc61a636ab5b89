// The operator registry's routes, as data.
import type { z } from 'zod';
import * as A from '../wire/admin.js';
import * as WW from '../wire/web.js';
import type { AdminOps } from '../engine/admin-ops.js';
import type { Caller } from '../engine/mail-engine.js';

/** An operator route served by handler H (the registry, or the wake chains). */
export interface HandlerRoute<H> {
  path: string;
  summary: string;
  input: z.ZodType;
  output: z.ZodType;
  run(handler: H, caller: Caller, input: never): Promise<unknown>;
}

/** A typed route of H: `run` sees the parsed input of its own schema. */
export const routeOf =
  <H>() =>
  <I extends z.ZodType>(r: Omit<HandlerRoute<H>, 'run' | 'input'> & { input: I; run(h: H, c: Caller, i: z.output<I>): Promise<unknown> }): HandlerRoute<H> =>
    r as unknown as HandlerRoute<H>;

export type AdminRoute = HandlerRoute<AdminOps>;

const route = routeOf<AdminOps>();

export const ADMIN_ROUTES: readonly AdminRoute[] = [
  route({ path: '/admin/account/add', summary: 'Create an account; the secret is returned once.', input: A.AccountAddRequest, output: A.AccountSecretResponse, run: (a, c, i) => a.accountAdd(c, i) }),
  route({ path: '/admin/account/rotate', summary: 'Issue a new secret; the old one stops working at once.', input: A.AccountIdRequest, output: A.AccountSecretResponse, run: (a, c, i) => a.accountRotate(c, i.id) }),
  route({ path: '/admin/account/remove', summary: 'Remove an account and delete its mail, sessions, wake chains and timers; a new account of the name inherits none of it.', input: A.AccountIdRequest, output: A.RemovedResponse, run: (a, c, i) => a.accountRemove(c, i.id) }),
  route({ path: '/admin/account/list', summary: 'Every account, never a secret or digest.', input: A.AccountIdRequest.partial(), output: A.AccountListResponse, run: (a, c) => a.accountList(c) }),
  route({ path: '/admin/room/add', summary: 'Create a room; with everyone, every account is a member (the only broadcast); with open, non-members may post too.', input: A.RoomAddRequest, output: A.OkResponse, run: (a, c, i) => a.roomAdd(c, i.name, { everyone: i.everyone ?? false, open: i.open ?? false }) }),
  route({ path: '/admin/room/set', summary: 'Open a room to posts from non-members, or close it to members only.', input: A.RoomSetRequest, output: A.OkResponse, run: (a, c, i) => a.roomSet(c, i.name, i.open) }),
  route({ path: '/admin/room/remove', summary: 'Remove a room with its memberships and delete its mail; a room created again under the name starts empty.', input: A.RoomRequest, output: A.RemovedResponse, run: (a, c, i) => a.roomRemove(c, i.name) }),
  route({ path: '/admin/room/list', summary: 'Every room with its members.', input: A.RoomRequest.partial(), output: A.RoomListResponse, run: (a, c) => a.roomList(c) }),
  route({ path: '/admin/room/member/add', summary: 'Grant an account membership of a room.', input: A.MemberRequest, output: A.OkResponse, run: (a, c, i) => a.memberAdd(c, i.room, i.account) }),
  route({ path: '/admin/room/member/remove', summary: 'Revoke a membership; the account loses the room\'s history.', input: A.MemberRequest, output: A.OkResponse, run: (a, c, i) => a.memberRemove(c, i.room, i.account) }),
  route({ path: '/admin/listener', summary: 'Set the loopback URL rung after mail for an account commits.', input: A.ListenerSetRequest, output: A.OkResponse, run: (a, c, i) => a.listenerSet(c, i.account, i.url) }),
  route({ path: '/admin/listener/remove', summary: 'Clear an account\'s listener.', input: A.ListenerRemoveRequest, output: A.OkResponse, run: (a, c, i) => a.listenerRemove(c, i.account) }),
  route({ path: '/admin/user/create', summary: 'Create a person (a human account) with a password for the browser door.', input: WW.UserCreateRequest, output: WW.UserCreateResponse, run: (a, c, i) => a.userCreate(c, i) }),
  route({ path: '/admin/user/passwd', summary: 'Set a person\'s password; every browser login of theirs ends.', input: WW.UserPasswordRequest, output: A.OkResponse, run: (a, c, i) => a.userPassword(c, i) }),
  route({ path: '/admin/user/revoke-sessions', summary: 'End every browser login of a person.', input: WW.UserIdRequest, output: WW.UserRevokeResponse, run: (a, c, i) => a.userRevokeSessions(c, i.id) }),
];

export const ADMIN_BY_PATH = new Map(ADMIN_ROUTES.map((r) => [r.path, r]));
