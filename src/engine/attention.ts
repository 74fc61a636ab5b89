// Quiet hours: dnd, focus, open (docs/teams.md). Being worked on: issue #17.
import { MailError } from '../wire/errors.js';
import type * as CT from '../wire/contacts.js';
import type { Caller } from './mail-engine.js';

export class AttentionBook {
  set(_c: Caller, _req: CT.AttentionRequest): Promise<CT.AttentionOut> {
    throw new MailError('not_supported', 'quiet hours are not built yet', { field: 'mode' });
  }
}
