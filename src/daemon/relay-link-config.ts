// <data-dir>/relay-link.json: the relay link's settings, the node token among them, so it is
// written atomically with mode 0600 (a temporary file renamed over it) and read once at start.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { RelayLinkSettings } from '../doors/relay-link/relay-link.js';
import { writeSecretFile } from './data-dir.js';

export const RELAY_LINK_FILE = 'relay-link.json';

const Stored = z.strictObject({
  server_url: z.string(),
  node_id: z.string(),
  node_token: z.string(),
  human_mailboxes: z.array(z.string()),
  ca_file: z.string().nullable(),
  enabled: z.boolean(),
});

export const relayLinkPath = (dataDir: string): string => join(dataDir, RELAY_LINK_FILE);

/** The saved settings; null when there are none. A damaged file is an error the caller logs (the
 *  daemon then serves without a link rather than refusing to start over it). */
export function loadRelayLink(dataDir: string): RelayLinkSettings | null {
  let text: string;
  try {
    text = readFileSync(relayLinkPath(dataDir), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  return Stored.parse(JSON.parse(text));
}

export function saveRelayLink(dataDir: string, s: RelayLinkSettings): void {
  const stored: z.infer<typeof Stored> = {
    server_url: s.server_url,
    node_id: s.node_id,
    node_token: s.node_token,
    human_mailboxes: [...s.human_mailboxes],
    ca_file: s.ca_file,
    enabled: s.enabled,
  };
  writeSecretFile(relayLinkPath(dataDir), `${JSON.stringify(stored, null, 2)}\n`);
}
