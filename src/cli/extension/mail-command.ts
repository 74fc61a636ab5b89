// `/mail` for the person at a pi or omp prompt, in omp-mail's syntax (recipient first):
//   /mail <to> <subject> <body…>   /mail inbox   /mail agents   /mail alias NAME   /mail whoami
// It speaks as the session it is typed into (the extension's connection is the agent process).
import { MailError } from '../../wire/errors.js';
import { neutralise, quoteForModel } from '../../wire/text.js';
import type { MailClient } from '../../client/http-client.js';

export const MAIL_COMMAND_HELP = 'mail4agent: /mail <to> <subject> <body…> | inbox | agents | alias NAME | whoami';

const INBOX_SHOWN = 8;

/** Splits off the first word; the rest keeps its inner spacing. */
function word(s: string): [string, string] {
  const t = s.trimStart();
  const i = t.search(/\s/);
  return i === -1 ? [t, ''] : [t.slice(0, i), t.slice(i).trimStart()];
}

export async function runMailCommand(client: MailClient, args: string): Promise<string> {
  const [first, rest] = word(args);
  switch (first) {
    case '':
    case 'help':
      return MAIL_COMMAND_HELP;
    case 'inbox':
      return inbox(client);
    case 'agents':
    case 'peers':
      return agents(client);
    case 'whoami': {
      const w = await client.whoami();
      const names = [...(w.slug ? [`${w.account}/${w.slug}`] : []), ...w.aliases.map((a) => `${w.account}/${a}`)];
      return `${w.address}${names.length ? ` (${names.join(', ')})` : ''}`;
    }
    case 'alias': {
      const [name] = word(rest);
      if (!name) return 'usage: /mail alias NAME';
      const s = await client.status({ alias: name });
      return `${s.address} now also answers to ${s.aliases.map((a) => a).join(', ')}`;
    }
    default:
      return send(client, first, rest);
  }
}

async function send(client: MailClient, to: string, rest: string): Promise<string> {
  const [subject, body] = word(rest);
  if (!subject) return `usage: ${MAIL_COMMAND_HELP}`;
  const input = { to, subject, body: body || subject };
  let r;
  try {
    r = await client.send(input);
  } catch (err) {
    // A bare name that is no account: a session of one's own account (its slug or alias), as in
    // omp-mail, where every session shares one namespace.
    if (!(err instanceof MailError && err.code === 'unknown_participant') || to.includes('/') || to.startsWith('#')) throw err;
    const me = await client.whoami();
    try {
      r = await client.send({ ...input, to: `${me.account}/${to}` });
    } catch (e) {
      // The daemon reads account/name as a slug only; the alias is account/@name.
      if (!(e instanceof MailError && e.code === 'unknown_session') || to.startsWith('@')) throw e;
      r = await client.send({ ...input, to: `${me.account}/@${to}` });
    }
  }
  const notes = [r.redirected ? 'redirected' : '', r.not_running ? 'not running: it gets the mail when it resumes' : '', r.quiet ? `stored quietly: ${r.quiet}` : ''].filter(
    Boolean,
  );
  return `→ ${r.to} · ${subject} · ${r.message_id}${notes.length ? ` (${notes.join('; ')})` : ''}`;
}

async function inbox(client: MailClient): Promise<string> {
  const page = await client.inbox({ limit: INBOX_SHOWN, include_bodies: false });
  if (page.messages.length === 0) return 'no unacknowledged mail';
  return page.messages.map((m) => `${neutralise(m.message_id)} from ${neutralise(m.from)}: ${quoteForModel(m.subject)}`).join('\n');
}

async function agents(client: MailClient): Promise<string> {
  const d = await client.directory();
  const lines = d.accounts.flatMap((a) => a.sessions.map((s) => `${neutralise(s.address)}${'working_on' in s && s.working_on ? ` — ${neutralise(s.working_on)}` : ''}`));
  const rooms = d.rooms.map((r) => `#${r.name}${r.member ? '' : ' (not a member)'}`);
  return [...(lines.length ? lines : ['no live sessions']), ...(rooms.length ? [`rooms: ${rooms.join(' ')}`] : [])].join('\n');
}
