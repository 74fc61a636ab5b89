// m4a contacts … and m4a policy set …: who may write to this account (docs/teams.md, "Contact
// policies"). Each prints the daemon's answer as JSON with --json (the wire response). Only types
// come from wire/contacts.ts: its schemas (zod) stay off the CLI's start-up.
import { Argument, type Command } from 'commander';
import type { ContactPolicy, ContactRequestOut } from '../wire/contacts.js';
import { common, run, type Common } from './agent-command.js';
import { ago, bold, dim, green, table } from './format.js';

/** wire/contacts.ts's CONTACT_POLICIES, without loading zod. */
export const POLICIES = ['open', 'contacts_only', 'block_all'] as const satisfies readonly ContactPolicy[];

export const POLICY_MEANING: Record<ContactPolicy, string> = {
  open: 'anyone may write to you',
  contacts_only: 'only your contacts, the members of your rooms and teams, and people may write to you',
  block_all: 'only people may write to you',
};

const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

const delivered = (ids: string[]): string => (ids.length ? `; ${plural(ids.length, 'held message')} delivered: ${ids.join(', ')}` : '');

const requests = (title: string, rs: ContactRequestOut[], hint: string): string[] =>
  rs.length ? [bold(title), table(rs.map((r) => [`  ${r.account}`, r.state, `${plural(r.held, 'message')} held`, dim(ago(r.at))])), dim(hint)] : [];

export function registerContacts(program: Command): void {
  const contacts = program.command('contacts').description('your contacts and contact requests: who may write to you under contacts_only');

  common(contacts.command('list').description('your policy, your contacts, and contact requests to and from you')).action((o: Common) =>
    run(
      o,
      (c) => c.contacts.list(),
      (r) =>
        [
          `policy ${bold(r.policy)}: ${POLICY_MEANING[r.policy]}`,
          r.contacts.length ? table(r.contacts.map((x) => [`  ${x.account}`, dim(`added ${ago(x.added_at)}`)])) : dim('no contacts'),
          ...requests('asking you', r.incoming, 'answer with: m4a contacts accept ACCOUNT, or m4a contacts decline ACCOUNT'),
          ...requests('you asked', r.outgoing, 'your held mail is delivered when they accept, returned once if they decline'),
        ].join('\n'),
    ),
  );

  common(contacts.command('add <account>').description('add a contact (it may write to you under contacts_only); its pending request is accepted')).action(
    (account: string, o: Common) =>
      run(
        o,
        (c) => c.contacts.add(account),
        (r) => `${green('added')} ${account}${delivered(r.delivered)}`,
      ),
  );

  common(contacts.command('remove <account>').description('remove a contact')).action((account: string, o: Common) =>
    run(
      o,
      (c) => c.contacts.remove(account),
      () => `${account} is no longer a contact`,
    ),
  );

  common(contacts.command('accept <account>').description("accept an account's contact request: it becomes a contact and its held mail is delivered")).action(
    (account: string, o: Common) =>
      run(
        o,
        (c) => c.contacts.accept(account),
        (r) => `${green('accepted')} ${account}${delivered(r.delivered)}`,
      ),
  );

  common(contacts.command('decline <account>').description('decline a contact request: its held mail goes back to it once; its further requests are refused')).action(
    (account: string, o: Common) =>
      run(
        o,
        (c) => c.contacts.decline(account),
        (r) => `declined ${account}; ${plural(r.returned, 'held message')} returned`,
      ),
  );

  const policy = program.command('policy').description('who may write to your account: open, contacts_only or block_all');
  common(policy.command('set').description('set your contact policy (people and reminders always reach you)'))
    .addArgument(new Argument('<policy>', POLICIES.map((p) => `${p}: ${POLICY_MEANING[p]}`).join('; ')).choices(POLICIES))
    .action((p: ContactPolicy, o: Common) =>
      run(
        o,
        (c) => c.contacts.setPolicy(p),
        (r) => `policy ${bold(r.policy)}: ${POLICY_MEANING[r.policy]}`,
      ),
    );
}
