// An account's A2A agent card (specification §4.4, §8): public, as A2A discovery wants, so it shows
// what the account's live sessions declared (working_on, role) and nothing a connection would not
// already reveal: no session ids, slugs, paths or digests.
import type { MailEngine } from '../../engine/mail-engine.js';
import type { AccountRecord } from '../../store/types.js';
import { A2A_PROTOCOL_VERSION, INPUT_MODES } from './a2a-wire.js';

const SKILLS_MAX = 16;

export interface AgentSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
  inputModes?: string[];
  outputModes?: string[];
}

export interface AgentCard {
  name: string;
  description: string;
  supportedInterfaces: { url: string; protocolBinding: 'JSONRPC'; protocolVersion: string }[];
  version: string;
  capabilities: { streaming: boolean; pushNotifications: boolean; extendedAgentCard: boolean };
  securitySchemes: Record<string, unknown>;
  securityRequirements: { schemes: Record<string, { list: string[] }> }[];
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentSkill[];
}

// What declared text may hold that the public card must not: paths (/…/…, ~/…, C:\…), session
// ids, long hex (digests, ids).
const PATHLIKE = /(?:~|\.{1,2})?\/[\w.@%+~-]+(?:\/[\w.@%+~-]*)+|~\/[\w.@%+~/-]*|\b[A-Za-z]:\\[\w.@%+~\\-]*/g;
const SESSION_ID = /\bs-[0-9a-z]{6,}\b/gi;
const LONG_HEX = /\b[0-9a-f]{16,}\b/gi;

/** Declared text with paths, session ids and digests replaced by `…`, on one line. */
export function scrub(s: string): string {
  return s.replace(PATHLIKE, '…').replace(SESSION_ID, '…').replace(LONG_HEX, '…').replace(/\s+/g, ' ').trim().slice(0, 256);
}

function kebab(s: string): string {
  return (
    s
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 48) || 'declared'
  );
}

/** The card needs no secret, so anyone may ask for it at any rate: its skills (a directory read)
 *  are computed at most once per account every SKILLS_TTL_MS, as long as the card's own max-age. */
const SKILLS_TTL_MS = 5_000;
const skillCaches = new WeakMap<MailEngine, Map<string, { at: number; skills: Promise<AgentSkill[]> }>>();

function cachedSkills(engine: MailEngine, account: AccountRecord): Promise<AgentSkill[]> {
  let skillCache = skillCaches.get(engine);
  if (!skillCache) skillCaches.set(engine, (skillCache = new Map<string, { at: number; skills: Promise<AgentSkill[]> }>()));
  const cache = skillCache;
  const now = Date.now();
  const hit = cache.get(account.id);
  if (hit && now - hit.at < SKILLS_TTL_MS) return hit.skills;
  if (cache.size > 1_000) cache.clear();
  const skills = skillsOf(engine, account);
  cache.set(account.id, { at: now, skills });
  skills.catch(() => cache.delete(account.id));
  return skills;
}

/** Skills: handing a task over (always), then one per distinct declared role/working_on of the
 *  account's live sessions. */
async function skillsOf(engine: MailEngine, account: AccountRecord): Promise<AgentSkill[]> {
  const dir = await engine.directory(await engine.callerFor(account, null), {});
  const sessions = dir.accounts.find((a) => a.id === account.id)?.sessions ?? [];
  const skills: AgentSkill[] = [
    {
      id: 'task',
      name: 'Take a task',
      description: `A message sent here becomes a task for ${account.id}: mail with the subject "Task: <first line>" and the text as its instructions. ${account.id} moves it (working, input_required, completed with a result …); GetTask, SubscribeToTask or SendStreamingMessage follow it.`,
      tags: ['task', 'mail4agent'],
      examples: ['Review the branch fix-42 and list what breaks.'],
    },
  ];
  const seen = new Set<string>();
  const ids = new Set(['task']);
  for (const s of sessions) {
    const role = 'role' in s && s.role ? scrub(s.role) : '';
    const work = 'working_on' in s && s.working_on ? scrub(s.working_on) : '';
    if (!role && !work) continue;
    const key = `${role}\n${work}`;
    if (seen.has(key) || skills.length >= SKILLS_MAX) continue;
    seen.add(key);
    let id = kebab(role || work);
    for (let n = 2; ids.has(id); n++) id = `${kebab(role || work)}-${n}`;
    ids.add(id);
    skills.push({
      id,
      name: role || work,
      description: work ? `A session of ${account.id} is working on: ${work}` : `A session of ${account.id} has the role ${role}`,
      tags: [role ? kebab(role) : 'working-on'],
    });
  }
  return skills;
}

/** The card of `account`, its JSON-RPC interface at `base` (http://host:port/a2a/<account>). */
export async function agentCard(engine: MailEngine, account: AccountRecord, base: string, version: string, pushNotifications: boolean): Promise<AgentCard> {
  const who = account.kind === 'human' ? 'a person' : account.kind === 'service' ? 'a service' : 'an agent';
  return {
    name: account.label || account.id,
    description: `${account.id}, ${who} on a mail4agent mailbox. Each message starts a task that is delivered to ${account.id} as mail; its state, history and result follow A2A. Callers authenticate with their own mail4agent secret, from a process on the mailbox's machine.`,
    supportedInterfaces: [{ url: base, protocolBinding: 'JSONRPC', protocolVersion: A2A_PROTOCOL_VERSION }],
    version,
    capabilities: { streaming: true, pushNotifications, extendedAgentCard: false },
    securitySchemes: {
      bearer: {
        httpAuthSecurityScheme: {
          scheme: 'Bearer',
          description: "the calling account's mail4agent secret; the connection must also come from an attested process of this machine",
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: [...INPUT_MODES],
    defaultOutputModes: [...INPUT_MODES],
    skills: await cachedSkills(engine, account),
  };
}
