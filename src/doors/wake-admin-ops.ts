// The operator's wake-chain routes. A chain runs programs and opens connections, so these are
// served only to a peer on this machine (the HTTP door checks the socket) holding the operator
// credential (the engine checks), never by the browser door.
import * as WK from '../wire/wake.js';
import type { WakeChains } from '../engine/wake-chains.js';
import { routeOf, type HandlerRoute } from './admin-ops.js';

export type WakeAdminRoute = HandlerRoute<WakeChains>;

const route = routeOf<WakeChains>();

export const WAKE_ADMIN_ROUTES: readonly WakeAdminRoute[] = [
  route({ path: '/admin/wake/set', summary: 'Set the delivery chain of an account (or of one session lineage with session). Local operator only.', input: WK.WakeSetRequest, output: WK.WakeSetResponse, run: (w, c, i) => w.set(c, i) }),
  route({ path: '/admin/wake/list', summary: 'Every delivery chain. Local operator only.', input: WK.WakeTargetRequest.partial(), output: WK.WakeListResponse, run: (w, c) => w.list(c) }),
  route({ path: '/admin/wake/clear', summary: 'Remove the delivery chain of an account (or of one lineage). Local operator only.', input: WK.WakeTargetRequest, output: WK.OkResponse, run: (w, c, i) => w.clear(c, i) }),
];

export const WAKE_ADMIN_BY_PATH = new Map(WAKE_ADMIN_ROUTES.map((r) => [r.path, r]));
