// wait_for (docs/email.md): the next message into the caller's reader scope that commits after
// the call and matches every filter, with its codes and links (mail-extract.ts). It is the inbox
// wait's machinery (waits.ts): registered on the scope's mail keys before each query, so a commit
// in between still wakes it; every wake is a hint and the query after the last seen seq is the
// truth. Old mail never answers it: the first query starts at the store's head at the call.
import { MailError } from '../wire/errors.js';
import type { WaitForRequest, WaitForResponse } from '../wire/wait-for.js';
import { readKeys, type PagedMessage, type ReaderScope, type Store } from '../store/types.js';
import type { Clock } from './clock.js';
import { extractCodesAndLinks } from './mail-extract.js';
import { presentPaged } from './present.js';
import type { ShortAddresses } from './short-address.js';
import type { WaitRoom } from './waits.js';
import { need, type Caller } from './mail-engine.js';
import { accountGone } from './inbox-reader.js';

export interface WaitForDeps {
  store: Store;
  clock: Clock;
  waits: WaitRoom;
  addresses: ShortAddresses;
  scope(c: Caller): Promise<ReaderScope>;
}

/** Messages read per query while looking for a match among what committed since the last. */
const PAGE = 100;

const clientGone = (): MailError => new MailError('malformed', 'the client closed the connection while its wait_for waited', { field: '(request)', reason: 'client_gone' });

const TIMED_OUT: WaitForResponse = { message: null, codes: [], links: [] };

export class MailWaitFor {
  constructor(private readonly d: WaitForDeps) {}

  async waitFor(c: Caller, req: WaitForRequest, signal?: AbortSignal): Promise<WaitForResponse> {
    need(c, 'read');
    // The bounds (timeout_secs at most 600, each filter one line of 256 bytes) are the wire's.
    const secs = req.timeout_secs;
    const deadline = this.d.clock.now() + Math.round(secs * 1000);
    // Its own owner, so a wait_for never displaces the session's inbox waits (or they it).
    const owner = `wait_for:${c.account.id}/${c.session?.id ?? ''}`;
    let scope = await this.d.scope(c);
    let after = await this.d.store.headSeq();
    for (;;) {
      const remaining = deadline - this.d.clock.now();
      if (remaining <= 0) return TIMED_OUT;
      const parked = this.d.waits.park(owner, c.account.id, readKeys(scope), remaining, signal);
      let rows: PagedMessage[];
      try {
        rows = await this.d.store.page(scope, { after, pendingOnly: false, limit: PAGE, threadId: null });
      } catch (err) {
        parked.cancel();
        throw err;
      }
      if (rows.length > 0) {
        parked.cancel();
        after = rows[rows.length - 1]!.seq;
        const hit = await this.firstMatch(c, rows, req);
        if (hit) return hit;
        continue;
      }
      const end = await parked.ended;
      if (end === 'gone') throw clientGone();
      if (end === 'removed') throw accountGone(c);
      if (end === 'refresh') scope = await this.d.scope(c);
      else if (end !== 'woken') return TIMED_OUT;
    }
  }

  private async firstMatch(c: Caller, rows: PagedMessage[], req: WaitForRequest): Promise<WaitForResponse | null> {
    const subject = req.subject_contains?.toLowerCase();
    const body = req.body_contains?.toLowerCase();
    const candidates = rows.filter((m) => (!subject || m.subject.toLowerCase().includes(subject)) && (!body || m.body.toLowerCase().includes(body)));
    if (candidates.length === 0) return null;
    const printed = await this.d.addresses.forMessages(candidates, [c.session]);
    const view = { includeBody: true, reader: c.account.id, verbose: false, self: c.session, printed };
    const from = req.from?.toLowerCase();
    for (const m of candidates) {
      const message = presentPaged(m, view);
      if (from && !fromMatches(message.from, m.fromAccount, from)) continue;
      return { message, ...extractCodesAndLinks(m.subject, m.body) };
    }
    return null;
  }
}

/** `from` names the sender as printed (`claude/web-ui`, `email:noreply@service.com`), just its
 *  account, or an e-mail address without `email:` (`--from noreply@service.com`). */
function fromMatches(printed: string, account: string, want: string): boolean {
  const email = want.includes('@') && !want.startsWith('email:') ? `email:${want}` : null;
  return [printed.toLowerCase(), account.toLowerCase()].some((x) => x === want || x === email);
}
