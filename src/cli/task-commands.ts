// m4a task … and m4a approval …: hand work over, move it through its states, ask for and give
// approvals (docs/tasks.md). Each prints the daemon's answer as JSON with --json (the wire
// response); text is short and passes through printText, so titles, notes and data are shown
// neutralised. Only types come from wire/tasks.ts: its schemas (zod) stay off the CLI's start-up.
import { readFile } from 'node:fs/promises';
import { InvalidArgumentError, type Command } from 'commander';
import type { ApprovalOut, TaskClaimRequest, TaskClaimResponse, TaskCreateRequest, TaskOut, TaskState } from '../wire/tasks.js';
import { pathOf } from '../wire/operation-facts.js';
import { neutralise } from '../wire/text.js';
import { UsageError } from './connect.js';
import { common, run, type Common } from './agent-command.js';
import { ago, bold, dim, green, table, yellow } from './format.js';
import { parseDuration } from './wake-commands.js';

/** A commander parser for a number option (refused before anything is sent, as a usage error). */
const number =
  (what: string, integer: boolean) =>
  (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n)))
      throw new InvalidArgumentError(`${what}: a ${integer ? 'whole ' : ''}number of at least 0`);
    return n;
  };

/** A lease epoch (the fencing token a claim printed): a whole number of at least 1. */
const epochOf = (v: string): number => {
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('--epoch: a whole number of at least 1 (as task claim printed it)');
  return n;
};

/** A claim's TTL as a duration (10s to 8h: the daemon names a value outside). */
const ttlOf = (v: string): number => {
  try {
    return parseDuration(v);
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
  }
};

type Ref = NonNullable<TaskCreateRequest['refs']>[number];

const collect = (v: string, acc: string[]): string[] => [...acc, v];

/** `kind:locator`, split at the first colon (a locator may hold colons: URLs, git refs). */
export function parseRef(spec: string): Ref {
  const i = spec.indexOf(':');
  if (i <= 0 || i === spec.length - 1) throw new UsageError(`not a ref: ${neutralise(spec)} (use kind:locator, e.g. git:refs/heads/fix)`);
  return { kind: spec.slice(0, i), locator: spec.slice(i + 1) };
}

export function parseData(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new UsageError('--data must be JSON, e.g. --data \'{"tests":12}\'');
  }
}

async function readText(file: string): Promise<string> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin as AsyncIterable<Buffer>) chunks.push(c);
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${neutralise(file)}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

const WAITING: readonly string[] = ['input_required', 'auth_required', 'pending'];
const DONE: readonly string[] = ['completed', 'approved'];
const ENDED: readonly string[] = ['failed', 'canceled', 'rejected', 'expired'];
const paintState = (s: string): string => (DONE.includes(s) ? green(s) : WAITING.includes(s) ? yellow(s) : ENDED.includes(s) ? dim(s) : s);
const indent = (text: string): string[] => text.split('\n').map((l) => `  ${l}`);

/** One line: what create, update and cancel answer. */
const taskLine = (t: TaskOut): string => `${bold(t.task_id)} ${paintState(t.state)} v${t.version} · ${t.from} → ${t.to} · ${t.title}`;

export function taskBlock(t: TaskOut): string {
  const lines = [`${bold(t.task_id)}  ${paintState(t.state)}  v${t.version}  ${t.from} → ${t.to}  ${dim(`updated ${ago(t.updated_at)}`)}`, `  ${bold(t.title)}`];
  lines.push(dim(`  thread ${t.thread_id}${t.parent_task_id ? ` · parent ${t.parent_task_id}` : ''}`));
  if (t.instructions !== undefined && t.instructions !== t.title) lines.push(...indent(t.instructions));
  for (const r of t.refs ?? []) lines.push(dim(`  ref ${r.kind}: ${r.locator}`));
  lines.push('history', table(t.history.map((h) => [`  ${h.state}`, ago(h.at), h.by, h.note ?? ''])));
  if (t.result) {
    lines.push('result');
    if (t.result.summary !== undefined) lines.push(...indent(t.result.summary));
    if (t.result.data !== undefined) lines.push(`  data ${JSON.stringify(t.result.data)}`);
    for (const r of t.result.refs ?? []) lines.push(dim(`  ref ${r.kind}: ${r.locator}`));
  }
  if (t.children?.length) lines.push('children', table(t.children.map((c) => [`  ${c.task_id}`, paintState(c.state), c.title])));
  return lines.join('\n');
}

export function approvalBlock(a: ApprovalOut): string {
  const lines = [`${bold(a.approval_id)}  ${paintState(a.state)}  ${a.requester} asks ${a.reviewer}  ${dim(ago(a.created_at))}`, `  ${bold(a.action)}`];
  if (a.details !== undefined) lines.push(...indent(a.details));
  const facts = [`thread ${a.thread_id}`, ...(a.task_id ? [`task ${a.task_id}`] : []), ...(a.expires_at && a.state === 'pending' ? [`expires ${a.expires_at}`] : [])];
  lines.push(dim(`  ${facts.join(' · ')}`));
  if (a.decided_at) lines.push(`  ${a.state} ${ago(a.decided_at)}${a.reason !== undefined ? `: ${a.reason}` : ''}`);
  return lines.join('\n');
}

export function registerTasks(program: Command): void {
  const task = program.command('task').description('hand work to an account or a session and track it: every change is mail in its thread');

  common(task.command('create <to> <title>').description('hand a task over (to: an account or account/session); it gets it as mail, "Task: <title>"'))
    .option('--instructions <text>', 'what to do')
    .option('--instructions-file <file>', 'the instructions from a file (- reads stdin)')
    .option('--ref <kind:locator>', 'a reference, e.g. git:refs/heads/fix (repeat, at most 8)', collect, [])
    .option('--parent <task-id>', 'a task this one is part of (one you can read)')
    .option('--key <idempotency-key>', 'a retry with the same key returns the first task')
    .action(async (to: string, title: string, o: Common & { instructions?: string; instructionsFile?: string; ref: string[]; parent?: string; key?: string }) => {
      await run(
        o,
        async (c) => {
          if (o.instructions !== undefined && o.instructionsFile !== undefined) throw new UsageError('give --instructions or --instructions-file, not both');
          const instructions = o.instructionsFile !== undefined ? await readText(o.instructionsFile) : o.instructions;
          const refs = o.ref.map(parseRef);
          return c.task.create({
            to,
            title,
            ...(instructions !== undefined ? { instructions } : {}),
            ...(refs.length ? { refs } : {}),
            ...(o.parent ? { parent_task_id: o.parent } : {}),
            ...(o.key ? { idempotency_key: o.key } : {}),
          });
        },
        (t) => `${green('created')} ${taskLine(t)}`,
      );
    });

  common(task.command('list').description('tasks assigned to you (--requested: asked for by you), newest change first'))
    .option('--requested', 'the tasks you handed over')
    .option('--state <state>', 'only this state: submitted, working, input_required, auth_required, completed, failed, canceled, rejected')
    .option('--after <cursor>', 'the next page (the cursor the previous page printed)')
    .option('--limit <n>', 'at most n tasks (default 20, max 100)', number('--limit', true))
    .action((o: Common & { requested?: boolean; state?: string; after?: string; limit?: number }) =>
      run(
        o,
        (c) =>
          c.task.list({
            role: o.requested ? 'requested' : 'assigned',
            ...(o.state ? { state: o.state as TaskState } : {}),
            ...(o.after ? { after: o.after } : {}),
            ...(o.limit !== undefined ? { limit: o.limit } : {}),
          }),
        (r) => {
          if (r.tasks.length === 0) return dim('no tasks');
          const rows = [
            ['TASK', 'STATE', o.requested ? 'TO' : 'FROM', 'UPDATED', 'TITLE'],
            ...r.tasks.map((t) => [t.task_id, paintState(t.state), o.requested ? t.to : t.from, ago(t.updated_at), t.title]),
          ];
          return `${table(rows)}${r.next_cursor ? `\n${dim(`more: --after ${r.next_cursor}`)}` : ''}`;
        },
      ),
    );

  common(task.command('show <task-id>').description('a task with its history, result and children'))
    .option('--wait <secs>', 'wait until it changes (at most 60)', number('--wait', false))
    .option('--after-version <n>', 'with --wait: until its version passes n (default: the version it has now)', number('--after-version', true))
    .action((id: string, o: Common & { wait?: number; afterVersion?: number }) =>
      run(
        o,
        async (c) => {
          if (o.afterVersion !== undefined && o.wait === undefined) throw new UsageError('--after-version goes with --wait');
          if (o.wait === undefined) return c.task.get({ task_id: id });
          const after = o.afterVersion ?? (await c.task.get({ task_id: id })).version;
          return c.task.get({ task_id: id, wait_secs: o.wait, after_version: after });
        },
        taskBlock,
      ),
    );

  common(task.command('claim [task-id]').description('take a task for a room you are in (or with --pool the oldest on offer) under an exclusive lease; update it with --epoch'))
    .option('--pool <#room>', 'the oldest task on offer in this room')
    .option('--ttl <duration>', 'how long the claim lives unless renewed: 90s, 30m, 2h (10s to 8h; default 15m)', ttlOf)
    .action((id: string | undefined, o: Common & { pool?: string; ttl?: number }) =>
      run(
        o,
        (c) => {
          if ((id === undefined) === (o.pool === undefined)) throw new UsageError('name one: a task id, or --pool #room for the oldest on offer');
          const req: TaskClaimRequest = { ...(id !== undefined ? { task_id: id } : { pool: o.pool }), ...(o.ttl !== undefined ? { ttl_secs: o.ttl } : {}) };
          return c.call<TaskClaimResponse>(pathOf('task.claim'), req);
        },
        (r) => {
          if (!r.task || !r.lease) return dim(`nothing on offer in ${o.pool ?? id ?? ''}`);
          const attempts = r.task.pool ? ` of ${r.task.pool.max_attempts}` : '';
          return [
            `${green('claimed')} ${taskLine(r.task)}`,
            `  lease ${bold(r.lease.lease_id)} epoch ${r.lease.epoch} · attempt ${r.lease.attempt}${attempts} · until ${r.lease.expires_at}`,
            dim(`  update it with: m4a task update ${r.task.task_id} <state> --epoch ${r.lease.epoch}`),
          ].join('\n');
        },
      ),
    );

  common(task.command('update <task-id> <state>').description('as the assignee: working, input_required (--note: the question), completed, failed or rejected'))
    .option('--epoch <n>', "a claimed task: your lease's epoch (task claim printed it)", epochOf)
    .option('--note <text>', 'why, or for input_required the question')
    .option('--summary <text>', 'the result: what was done')
    .option('--data <json>', 'the result: any JSON (at most 64 KiB)')
    .option('--ref <kind:locator>', 'the result: a reference (repeat)', collect, [])
    .action((id: string, state: string, o: Common & { epoch?: number; note?: string; summary?: string; data?: string; ref: string[] }) =>
      run(
        o,
        (c) => {
          const refs = o.ref.map(parseRef);
          const result = {
            ...(o.summary !== undefined ? { summary: o.summary } : {}),
            ...(o.data !== undefined ? { data: parseData(o.data) } : {}),
            ...(refs.length ? { refs } : {}),
          };
          return c.task.update({
            task_id: id,
            state: state as TaskState,
            ...(o.epoch !== undefined ? { epoch: o.epoch } : {}),
            ...(o.note !== undefined ? { note: o.note } : {}),
            ...(Object.keys(result).length ? { result } : {}),
          });
        },
        taskLine,
      ),
    );

  common(task.command('cancel <task-id>').description('as the requester: cancel a task that is not finished'))
    .option('--reason <text>', 'why')
    .action((id: string, o: Common & { reason?: string }) => run(o, (c) => c.task.cancel({ task_id: id, ...(o.reason !== undefined ? { reason: o.reason } : {}) }), taskLine));

  const approval = program.command('approval').description('ask an account to approve an action, and decide; the mailbox records it and never runs anything');

  common(approval.command('request <reviewer> <action>').description('ask the reviewer (an account) to approve an action; a linked task waits in auth_required'))
    .option('--details <text>', 'what the reviewer should know')
    .option('--task <task-id>', 'the task that waits for the decision')
    .option('--expires-in <duration>', 'undecided after this long it expires: 90, 30s, 45m, 2h, 1d (at most 30d)')
    .action((reviewer: string, action: string, o: Common & { details?: string; task?: string; expiresIn?: string }) =>
      run(
        o,
        (c) =>
          c.approval.request({
            reviewer,
            action,
            ...(o.details !== undefined ? { details: o.details } : {}),
            ...(o.task ? { task_id: o.task } : {}),
            ...(o.expiresIn !== undefined ? { expires_in: parseDuration(o.expiresIn) } : {}),
          }),
        approvalBlock,
      ),
    );

  common(approval.command('decide <approval-id> <decision>').description('as the reviewer: approved or rejected, once, with a reason'))
    .requiredOption('--reason <text>', 'why (the requester gets it as mail)')
    .action((id: string, decision: string, o: Common & { reason: string }) =>
      run(
        o,
        (c) => {
          if (decision !== 'approved' && decision !== 'rejected') throw new UsageError(`the decision is approved or rejected, not ${neutralise(decision)}`);
          return c.approval.decide({ approval_id: id, decision, reason: o.reason });
        },
        approvalBlock,
      ),
    );

  common(approval.command('show <approval-id>').description('an approval and its decision'))
    .option('--wait <secs>', 'wait for the decision (at most 60)', number('--wait', false))
    .action((id: string, o: Common & { wait?: number }) =>
      run(o, (c) => c.approval.get({ approval_id: id, ...(o.wait !== undefined ? { wait_secs: o.wait } : {}) }), approvalBlock),
    );
}
