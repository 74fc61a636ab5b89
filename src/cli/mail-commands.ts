// The human verbs: send, reply, inbox, read, ack, thread, whoami, peers, status, alias.
// Each prints the daemon's answer as JSON with --json (the wire response: a stable schema).
import type { Command } from 'commander';
import type { MessageOut, SendResponse } from '../wire/ops.js';
import { UsageError } from './connect.js';
import { common, run, type Common } from './agent-command.js';
import { fail, EXIT } from './output.js';
import { ago, bold, dim, green, messageBlock, shortAddress, table } from './format.js';

async function bodyArg(body: string | undefined): Promise<string> {
  if (body !== '-') return body ?? '';
  const chunks: Buffer[] = [];
  for await (const c of process.stdin as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

interface SendFlags extends Common {
  replyTo?: string;
  urgent?: boolean;
  idempotencyKey?: string;
  correlation?: string;
  requestContact?: boolean;
}

/** --request-contact: a send the recipient's policy refused, held until it answers. */
const heldNotice = (r: SendResponse): string | undefined =>
  r.held
    ? `held ${r.message_id} for ${r.held.recipient} (its policy: ${r.held.policy}): it is asked to accept you as a contact; delivered if it accepts, returned once if it declines`
    : undefined;

const list = (ms: MessageOut[], empty: string): string => (ms.length ? ms.map(messageBlock).join('\n\n') : dim(empty));

export function registerMail(program: Command): void {
  common(program.command('send <to> <subject> [body]').description('send mail: to is an account, account/session (id, slug or @alias), #room or team:NAME; body - reads stdin'))
    .option('--reply-to <id>', 'thread it under a message')
    .option('--urgent', 'urgent priority (needs permission)')
    .option('--idempotency-key <key>', 'a retry with the same key sends nothing new')
    .option('--correlation <text>', 'a free string the mailbox never reads')
    .option('--request-contact', "if the recipient's contact policy refuses you, hold the message and ask it to accept you")
    .action(async (to: string, subject: string, body: string | undefined, o: SendFlags) => {
      const text = await bodyArg(body);
      await run(
        o,
        (c) =>
          c.send({
            to,
            subject,
            body: text,
            ...(o.replyTo ? { reply_to: o.replyTo } : {}),
            ...(o.urgent ? { priority: 'urgent' as const } : {}),
            ...(o.idempotencyKey ? { idempotency_key: o.idempotencyKey } : {}),
            ...(o.correlation ? { correlation: o.correlation } : {}),
            ...(o.requestContact ? { request_contact: true } : {}),
          }),
        (r) =>
          heldNotice(r) ??
          `${green('sent')} ${r.message_id} to ${r.to}${r.redirected ? ' (redirected)' : ''}${r.duplicate ? ' (already sent with this key)' : ''}` +
            // team: and leader: mail: the copy each member got, and who refused one.
            (r.expanded ? `\n${r.expanded.map((x) => `  ${x.to}: ${x.message_id}`).join('\n')}` : '') +
            (r.refused?.length ? `\n${r.refused.map((x) => `  ${x.recipient}: refused (${x.policy})`).join('\n')}` : ''),
      );
    });

  common(program.command('reply <message-id> [body]').description('answer a message in its thread (to its sender; room mail to the room) and acknowledge it; body - reads stdin'))
    .option('--subject <subject>', 'instead of Re: <original subject> (then the message is not acknowledged)')
    .option('--sender', 'room mail: answer its sender alone')
    .option('--no-ack', 'leave the message unacknowledged')
    .action(async (id: string, body: string | undefined, o: Common & { subject?: string; sender?: boolean; ack: boolean }) => {
      const text = await bodyArg(body);
      await run(
        o,
        async (c) => {
          if (o.subject === undefined) return c.reply({ message_id: id, body: text, ...(o.ack ? {} : { ack: false }), ...(o.sender ? { to_sender: true } : {}) });
          const orig = (await c.get(id)).message;
          return c.send({ to: orig.from, subject: o.subject, body: text, reply_to: id });
        },
        (r) => `${green('replied')} ${r.message_id} to ${r.to}${r.redirected ? " (the sender's session ended; redirected)" : ''}`,
      );
    });

  common(program.command('inbox').description('your unacknowledged mail, oldest first (reading changes nothing)'))
    .option('--wait <secs>', 'park until mail arrives (at most 60)', Number)
    .option('--all', 'include acknowledged mail')
    .option('--thread <id>', 'only this thread')
    .option('--limit <n>', 'at most n messages (default 50, max 256)', Number)
    .option('--after <cursor>', 'only mail after this cursor (from --json next_cursor)')
    .option('--no-bodies', 'subjects only')
    .option('--verbose', 'every field of each message, null and default ones too (for --json scripts)')
    .action((o: Common & { wait?: number; all?: boolean; thread?: string; limit?: number; after?: string; bodies: boolean; verbose?: boolean }) =>
      run(
        o,
        (c) =>
          c.inbox({
            ...(o.wait !== undefined ? { wait_secs: o.wait } : {}),
            ...(o.all ? { include_acked: true } : {}),
            ...(o.thread ? { thread_id: o.thread } : {}),
            ...(o.limit !== undefined ? { limit: o.limit } : {}),
            ...(o.after ? { after: o.after } : {}),
            ...(o.bodies ? {} : { include_bodies: false }),
            ...(o.verbose ? { verbose: true } : {}),
          }),
        (r) => `${list(r.messages, 'no mail')}\n${dim(`${r.unread} unread`)}`,
      ),
    );

  common(program.command('read <message-id>').description('show one message in full'))
    .option('--thread', 'the whole thread')
    .option('--verbose', 'every field, null and default ones too (for --json scripts)')
    .action((id: string, o: Common & { thread?: boolean; verbose?: boolean }) =>
      run(
        o,
        (c) => c.get(id, !!o.thread, !!o.verbose),
        (r) => (r.thread ? list(r.thread, '') : messageBlock(r.message)),
      ),
    );

  common(program.command('thread <id>').description('the whole thread a message belongs to')).action((id: string, o: Common) =>
    run(
      o,
      (c) => c.get(id, true),
      (r) => list(r.thread ?? [r.message], ''),
    ),
  );

  common(program.command('ack <message-id...>').description('mark mail as handled')).action((ids: string[], o: Common) =>
    run(
      o,
      (c) => c.ack(ids),
      (r) => `${green('acknowledged')} ${r.acked.length} · ${r.unread} unread`,
    ),
  );

  common(program.command('unread').description('how much unacknowledged mail you have')).action((o: Common) =>
    run(
      o,
      (c) => c.unread(),
      (r) => String(r.unread),
    ),
  );

  common(program.command('whoami').description('your address, account, rooms and session card')).action((o: Common) =>
    run(
      o,
      (c) => c.whoami(),
      (r) =>
        table([
          ['address', bold(r.address)],
          [
            'names',
            [r.slug, ...r.aliases]
              .filter(Boolean)
              .map((n) => `${r.account}/${n}`)
              .join(' ') || '-',
          ],
          ['account', `${r.account} (${r.kind})`],
          ['rooms', r.rooms.join(' ') || '-'],
          ['process', r.card.attested ? `pid ${r.card.attested.pid} ${r.card.attested.exe}` : '-'],
          ['agent', [r.card.corroborated.provider, r.card.corroborated.model].filter(Boolean).join(' ') || '-'],
          ['cwd', r.card.corroborated.cwd ?? '-'],
          ['working on', r.card.declared.working_on ?? '-'],
        ]),
    ),
  );

  common(program.command('peers').description('every account, its live sessions, and the rooms'))
    .option('--ended', 'also sessions that ended')
    .action((o: Common & { ended?: boolean }) =>
      run(
        o,
        (c) => c.directory({ detail: true, ...(o.ended ? { include_ended: true } : {}) }),
        (r) => {
          const rows = [['ADDRESS', 'KIND', 'LIVE', 'SEEN', 'AGENT', 'WORKING ON']];
          for (const a of r.accounts) {
            const sessions = a.sessions;
            rows.push([bold(a.id), a.kind ?? 'agent', '', '', '', '']);
            for (const s of sessions) {
              const name = [s.slug, ...s.aliases].filter(Boolean).join(', ');
              rows.push([
                `  ${a.id}/${name || shortAddress(s.address).split('/')[1]}`,
                '',
                s.live ? green('live') : dim('ended'),
                ago(s.last_seen),
                s.card.corroborated.provider ?? '',
                s.card.declared.working_on ?? '',
              ]);
            }
          }
          const rooms = r.rooms.map((x) => `#${x.name}${x.member ? ' (member)' : ''}`).join('  ');
          return `${table(rows)}\n\n${rooms ? `rooms: ${rooms}` : dim('no rooms')}`;
        },
      ),
    );

  common(program.command('alias <name>').description('give this session a name others can write to as account/@name (the @ is added if left out)'))
    .option('--remove', 'remove the alias instead')
    .action((name: string, o: Common & { remove?: boolean }) =>
      run(
        o,
        (c) => c.status(o.remove ? { unalias: name } : { alias: name }),
        (r) =>
          `${r.address.split('/')[0]}/${name.startsWith('@') ? name : `@${name}`} ${o.remove ? 'removed' : 'now reaches this session'} · aliases: ${r.aliases.join(', ') || '-'} · slug: ${r.slug ?? '-'}`,
      ),
    );

  common(program.command('status').description('declare what this session works on (others see it in peers)'))
    .option('--working-on <text>', 'what you are working on')
    .option('--role <role>', 'your role')
    .option('--parent <address>', 'the session that spawned you')
    .action((o: Common & { workingOn?: string; role?: string; parent?: string }) => {
      if (o.workingOn === undefined && o.role === undefined && o.parent === undefined) fail(new UsageError('give --working-on, --role or --parent'), !!o.json);
      return run(
        o,
        (c) =>
          c.status({
            ...(o.workingOn !== undefined ? { working_on: o.workingOn } : {}),
            ...(o.role !== undefined ? { role: o.role } : {}),
            ...(o.parent !== undefined ? { parent: o.parent } : {}),
          }),
        (r) => `${r.address}: ${JSON.stringify(r.card.declared)}`,
      );
    });
}

export { EXIT };
