// Planning: every target is read, parsed and edited in memory first, so a refusal (unparseable
// file, an m4a entry someone else wrote) leaves nothing changed anywhere.
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parse as parseToml } from '@decimalturn/toml-patch';
import { parse as parseJsonc } from 'jsonc-parser';
import { dropBlock, findBlock, MD_MARKERS, putBlock, TOML_MARKERS } from './block-edit.js';
import { count, getAt, insertItem, insertMember, itemPiece, parseJson, rawValue, removeAt, replaceValue, sameAs, spliceValue, valueOf, type JsonDoc } from './json-edit.js';
import { SERVER, type JsonObject, type Target } from './programs.js';
import { Refusal } from './refusal.js';
import type { FileAction } from './result.js';
import type { Edit, FileRecord } from './state.js';

export interface Change {
  path: string;
  before: string | null;
  /** null: the file is deleted (or stays absent). */
  after: string | null;
  action: FileAction;
  /** Setup: the record to keep. Unsetup: the record being undone. */
  record: FileRecord | null;
  /** Setup: an earlier record of this setup for a file it no longer writes (hooks turned off),
   *  being undone as unsetup would. */
  retired?: FileRecord;
  /** Something the user should know or do about this file. */
  note?: string;
}

export function readText(path: string): string | null {
  if (!existsSync(path)) return null;
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new Refusal(`cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`, path);
  }
}

/** Directories that would have to be created for `path`, outermost first. */
export function missingDirs(path: string): string[] {
  const out: string[] = [];
  for (let d = dirname(path); !existsSync(d) && dirname(d) !== d; d = dirname(d)) out.unshift(d);
  return out;
}

const clone = <T>(v: T): T => structuredClone(v);

function setAt(obj: JsonObject, keys: string[], value: unknown): JsonObject {
  let o = obj;
  for (const k of keys.slice(0, -1)) o = (o[k] ??= {}) as JsonObject;
  o[keys[keys.length - 1]!] = value;
  return obj;
}

function isEmpty(v: unknown): boolean {
  return Array.isArray(v) ? v.length === 0 : v !== null && typeof v === 'object' && Object.keys(v).length === 0;
}

/** Drops the container at `path`, then its parents, while they are empty: at most `created` levels
 *  (the containers setup added). */
function pruneValue(obj: JsonObject, path: string[], created: number): JsonObject {
  for (let n = path.length; n > 0 && n > path.length - created; n--) {
    const parent = path.slice(0, n - 1).reduce<JsonObject | undefined>((o, k) => o?.[k] as JsonObject | undefined, obj);
    if (!parent || !isEmpty(parent[path[n - 1]!])) break;
    delete parent[path[n - 1]!];
  }
  return obj;
}

/** The same on the text, through jsonc-parser's removal (the fallback when our text was edited). */
function pruneText(text: string, path: string[], created: number): string {
  let out = text;
  for (let n = path.length; n > 0 && n > path.length - created; n--) {
    if (!isEmpty(getAt(parseJson(out, 'the edited file'), path.slice(0, n)))) break;
    out = removeAt(out, path.slice(0, n));
  }
  return out;
}

function tomlParse(text: string, path: string): JsonObject {
  try {
    return JSON.parse(JSON.stringify(parseToml(text))) as JsonObject;
  } catch (err) {
    const msg = err instanceof Error ? err.message.split('\n') : [String(err)];
    throw new Refusal(`cannot parse ${path}: ${[msg[0], msg[msg.length - 1]].join(' ')}; fix or move it, then run again`, path);
  }
}

const actionOf = (before: string | null, after: string): FileAction => (before === after ? 'unchanged' : before === null ? 'created' : 'updated');

// ---- setup ----

/** One target planned against the file's text so far. `edit` null: nothing of ours to record;
 *  `kept`: the edit is an earlier one (unchanged, or replaced in place), so it keeps its place in
 *  the record's order. */
interface Planned {
  after: string;
  edit: Edit | null;
  kept: boolean;
}

type JsonEntryEdit = Extract<Edit, { kind: 'json-entry' }>;
type JsonItemEdit = Extract<Edit, { kind: 'json-item' }>;
type JsonAppendEdit = Extract<Edit, { kind: 'json-append' }>;

/** The refusal for a container of the wrong type on the way to `keys` (the last one an array, or
 *  with `leaf` false not checked: an entry's own value). */
function checkArrayAt(doc: JsonDoc, keys: string[], file: string, leaf = true): unknown[] {
  for (let n = 1; n <= keys.length - (leaf ? 0 : 1); n++) {
    const v = getAt(doc, keys.slice(0, n));
    if (v === undefined) return [];
    const want = n === keys.length ? 'array' : 'object';
    const is = Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v;
    if (is !== want) throw new Refusal(`cannot use ${file}: "${keys.slice(0, n).join('.')}" is a${is === 'object' || is === 'array' ? 'n' : ''} ${is}, not an ${want}`, file);
  }
  return getAt(doc, keys) as unknown[];
}

function planJsonEntry(t: Extract<Target, { kind: 'json-entry' }>, text: string, prior: JsonEntryEdit | undefined, force: boolean): Planned {
  const doc = parseJson(text, t.path);
  checkArrayAt(doc, t.keys, t.path, false);
  const current = getAt(doc, t.keys);
  const expected = setAt(clone(valueOf(doc)), t.keys, t.value);
  const check = (out: string): string => {
    if (!sameAs(out, expected)) throw new Refusal(`could not edit ${t.path} safely (the result would not parse as intended); nothing was changed`, t.path);
    return out;
  };
  if (current === undefined) {
    const ins = insertMember(doc, t.keys, t.value, t.path);
    return {
      after: check(ins.text),
      edit: {
        kind: 'json-entry',
        keys: t.keys,
        value: t.value,
        lead: ins.lead,
        body: ins.body,
        trail: ins.trail,
        created: ins.created,
        ...(t.ensure ? { shared: true as const } : {}),
      },
      kept: false,
    };
  }
  if (t.ensure) {
    // Not ours: kept as it is (and left by unsetup) unless we added it.
    if (t.ensure === 'present' || isDeepStrictEqual(current, t.value)) return { after: doc.text, edit: prior ?? null, kept: true };
    throw new Refusal(`cannot use ${t.path}: "${t.keys.join('.')}" is ${JSON.stringify(current)}, not ${JSON.stringify(t.value)}; fix or move it, then run again`, t.path);
  }
  if (isDeepStrictEqual(current, t.value)) {
    if (prior) return { after: doc.text, edit: prior, kept: true };
    return { after: doc.text, edit: { kind: 'json-entry', keys: t.keys, value: t.value, lead: '', body: rawValue(doc, t.keys) ?? '', trail: '', created: 0 }, kept: false };
  }
  const ours = prior !== undefined && isDeepStrictEqual(current, prior.value);
  if (!ours && !force)
    throw new Refusal(
      `${t.path} already has an MCP server named "${SERVER}" that m4a setup did not write; rename or remove it, or run again with --force (it is put back by unsetup)`,
      t.path,
    );
  const r = replaceValue(doc, t.keys, t.value);
  const edit: Edit = ours
    ? { ...prior, value: t.value, body: r.body }
    : { kind: 'json-entry', keys: t.keys, value: t.value, lead: '', body: r.body, trail: '', created: 0, replaced: prior?.replaced ?? r.old };
  return { after: check(r.text), edit, kept: prior !== undefined };
}

function planJsonItem(t: Extract<Target, { kind: 'json-item' }>, text: string, prior: JsonItemEdit | undefined): Planned {
  const doc = parseJson(text, t.path);
  const current = getAt(doc, t.keys);
  if (Array.isArray(current) && current.includes(t.item)) return { after: doc.text, edit: prior ?? null, kept: true };
  const ins = insertItem(doc, t.keys, t.item, t.path);
  const expected = setAt(clone(valueOf(doc)), t.keys, [...(Array.isArray(current) ? (current as unknown[]) : []), t.item]);
  if (!sameAs(ins.text, expected)) throw new Refusal(`could not edit ${t.path} safely; nothing was changed`, t.path);
  return { after: ins.text, edit: { kind: 'json-item', keys: t.keys, item: t.item, lead: ins.lead, trail: ins.trail, created: ins.created }, kept: false };
}

/** Whether `v` holds the string `s` anywhere (how our hook object is told from the user's). */
function holds(v: unknown, s: string): boolean {
  if (v === s) return true;
  if (Array.isArray(v)) return v.some((x) => holds(x, s));
  return v !== null && typeof v === 'object' && Object.values(v).some((x) => holds(x, s));
}

function planJsonAppend(t: Extract<Target, { kind: 'json-append' }>, text: string, prior: JsonAppendEdit | undefined): Planned {
  const doc = parseJson(text, t.path);
  const items = checkArrayAt(doc, t.keys, t.path);
  const expected = (list: unknown[]): JsonObject => setAt(clone(valueOf(doc)), t.keys, list);
  const check = (out: string, list: unknown[]): string => {
    if (!sameAs(out, expected(list))) throw new Refusal(`could not edit ${t.path} safely (the result would not parse as intended); nothing was changed`, t.path);
    return out;
  };
  const same = items.findIndex((v) => isDeepStrictEqual(v, t.value));
  if (same >= 0) {
    if (prior && isDeepStrictEqual(prior.value, t.value)) return { after: doc.text, edit: prior, kept: true };
    // Ours from a setup whose record is lost, or written by hand exactly as we would: ours now.
    return { after: doc.text, edit: { kind: 'json-append', keys: t.keys, value: t.value, marker: t.marker, ...itemPiece(doc, t.keys, same), created: 0 }, kept: false };
  }
  // Our earlier object (another bridge command or account): replaced where it is.
  const earlier = prior ? items.findIndex((v) => isDeepStrictEqual(v, prior.value)) : -1;
  if (prior && earlier >= 0) {
    const r = replaceValue(doc, [...t.keys, earlier], t.value);
    return {
      after: check(
        r.text,
        items.map((v, i) => (i === earlier ? t.value : v)),
      ),
      edit: { ...prior, value: t.value, marker: t.marker, body: r.body },
      kept: true,
    };
  }
  // Our command in an object edited by hand: the user's now; left as it is (unsetup removes it
  // only if we added it).
  if (items.some((v) => holds(v, t.marker))) return { after: doc.text, edit: prior ?? null, kept: true };
  const ins = insertItem(doc, t.keys, t.value, t.path);
  return {
    after: check(ins.text, [...items, t.value]),
    edit: { kind: 'json-append', keys: t.keys, value: t.value, marker: t.marker, lead: ins.lead, body: ins.body, trail: ins.trail, created: ins.created },
    kept: false,
  };
}

function planBlock(t: Extract<Target, { kind: 'block' }>, text: string, prior: Extract<Edit, { kind: 'block' }> | undefined): Planned {
  const markers = t.syntax === 'toml' ? TOML_MARKERS : MD_MARKERS;
  const put = putBlock(text, markers, t.body, t.path);
  if (t.syntax === 'toml' && t.table) {
    tomlParse(text, t.path);
    const foreign = tomlParse(dropBlock(text, markers, '', t.path), t.path).mcp_servers as JsonObject | undefined;
    if (foreign?.[SERVER] !== undefined)
      throw new Refusal(`${t.path} already defines [mcp_servers.${SERVER}] outside the mail4agent block; rename or remove it, then run again`, t.path);
    let ours: unknown;
    try {
      ours = (parseToml(put.text) as { mcp_servers?: JsonObject }).mcp_servers?.[SERVER];
    } catch (err) {
      throw new Refusal(
        `adding [mcp_servers.${SERVER}] would make ${t.path} invalid TOML (${err instanceof Error ? err.message.split('\n').pop() : String(err)}); nothing was changed`,
        t.path,
      );
    }
    if (!isDeepStrictEqual(JSON.parse(JSON.stringify(ours)), t.table))
      throw new Refusal(`could not add [mcp_servers.${SERVER}] to ${t.path} as intended; nothing was changed`, t.path);
  }
  return { after: put.text, edit: { kind: 'block', syntax: t.syntax, prefix: put.prefix ?? prior?.prefix ?? '', body: t.body }, kept: prior !== undefined };
}

function planWhole(t: Extract<Target, { kind: 'whole' }>, before: string | null, prior: Extract<Edit, { kind: 'whole' }> | undefined, force: boolean): Planned {
  const edit: Edit = { kind: 'whole', content: t.content, ...(prior?.replaced !== undefined ? { replaced: prior.replaced } : {}) };
  if (before === null || before === t.content || before === prior?.content) return { after: t.content, edit, kept: prior !== undefined };
  if (!force) throw new Refusal(`${t.path} exists and was not written by m4a setup; move it away, or run again with --force (it is put back by unsetup)`, t.path);
  return { after: t.content, edit: { ...edit, replaced: prior?.replaced ?? before }, kept: prior !== undefined };
}

/** Whether an earlier edit is the one `t` makes (the same place in the same file). */
const fills = (t: Target, e: Edit): boolean => t.kind === e.kind && (!('keys' in t) || !('keys' in e) || isDeepStrictEqual(t.keys, e.keys));

function planTarget(t: Target, text: string | null, edits: Edit[], force: boolean): Planned {
  const prior = edits.find((e) => fills(t, e));
  switch (t.kind) {
    case 'json-entry':
      return planJsonEntry(t, text ?? '', prior as JsonEntryEdit | undefined, force);
    case 'json-item':
      return planJsonItem(t, text ?? '', prior as JsonItemEdit | undefined);
    case 'json-append':
      return planJsonAppend(t, text ?? '', prior as JsonAppendEdit | undefined);
    case 'block':
      return planBlock(t, text ?? '', prior as Extract<Edit, { kind: 'block' }> | undefined);
    case 'whole':
      return planWhole(t, text, prior as Extract<Edit, { kind: 'whole' }> | undefined, force);
  }
}

/** Every change setup would make, one per file, or a Refusal before anything is written.
 *  `recordOf` gives the state's record for a path (ours, or another setup's); `own` is this
 *  setup's earlier record, whose edits no target makes any more are undone. */
export function planSetup(targets: Target[], recordOf: (path: string) => FileRecord | undefined, force: boolean, own: FileRecord[] = []): Change[] {
  const paths = [...new Set(targets.map((t) => t.path))];
  const changes = paths.map((path): Change => {
    const before = readText(path);
    const old = recordOf(path);
    const mine = targets.filter((t) => t.path === path);
    const oldEdits = old?.edits ?? [];
    // Edits of ours no target makes any more (hooks turned off) go first, newest first.
    const ownEdits = own.find((r) => r.path === path)?.edits ?? [];
    const stale = ownEdits.filter((e) => !mine.some((t) => fills(t, e)));
    let text = before;
    for (const e of [...stale].reverse()) if (text !== null) text = undoEdit(path, e, text).after;
    const kept: { edit: Edit; at: number }[] = [];
    const notes: string[] = [];
    mine.forEach((t, i) => {
      const p = planTarget(t, text, oldEdits, force);
      text = p.after;
      if (p.edit) kept.push({ edit: p.edit, at: p.kept ? oldEdits.findIndex((e) => fills(t, e)) : oldEdits.length + i });
      if (t.kind === 'json-item' && before !== null) {
        const disabled = getAt(parseJson(before, t.path), ['disabledMcpjsonServers']);
        if (Array.isArray(disabled) && disabled.includes(t.item)) notes.push(`${t.path} lists "${t.item}" in disabledMcpjsonServers, which wins over approval: remove it there`);
      }
    });
    const edits = kept.sort((a, b) => a.at - b.at).map((k) => k.edit);
    const after = text!;
    const record: FileRecord | null = edits.length
      ? { path, existed: old?.existed ?? before !== null, dirs: old?.dirs ?? missingDirs(path), backup: old?.backup ?? false, edits }
      : null;
    return { path, before, after, action: actionOf(before, after), record, ...(notes.length ? { note: notes.join('; ') } : {}) };
  });
  // Files of ours no target writes any more: undone as unsetup would.
  for (const rec of own) if (!paths.includes(rec.path)) changes.push({ ...undoFile(rec), record: null, retired: rec });
  return changes;
}

// ---- unsetup ----

function undoJson(path: string, edit: JsonEntryEdit | JsonItemEdit | JsonAppendEdit, before: string): string {
  const doc = parseJson(before, path);
  const current = getAt(doc, edit.keys);
  const expected = clone(valueOf(doc));
  const candidates: string[] = [];
  const body = edit.kind === 'json-item' ? JSON.stringify(edit.item) : edit.body;
  const exact = edit.lead + body + edit.trail;
  const once = (edit.lead || edit.trail) && count(before, exact) === 1;
  /** Our piece with the value as it is now (edited by hand since setup), if it is there once. */
  const asNow = (keys: (string | number)[]): void => {
    const raw = rawValue(doc, keys);
    const piece = raw === undefined ? '' : edit.lead + raw + edit.trail;
    if ((edit.lead || edit.trail) && raw !== body && count(before, piece) === 1) candidates.push(before.replace(piece, () => ''));
  };
  if (edit.kind === 'json-entry') {
    if (current === undefined) return before;
    // A shared member holding another value now is whoever set it (npm's, in opencode's lock).
    if (edit.shared && !isDeepStrictEqual(current, edit.value)) return before;
    const container = edit.keys.slice(0, -1);
    if (edit.replaced !== undefined) {
      // --force replaced someone's entry: put theirs back.
      setAt(expected, edit.keys, parseJsonc(edit.replaced));
      candidates.push(spliceValue(doc, edit.keys, edit.replaced));
    } else {
      const leaf = container.reduce<JsonObject>((o, k) => o[k] as JsonObject, expected);
      delete leaf[edit.keys[edit.keys.length - 1]!];
      pruneValue(expected, container, edit.created);
      if (once) candidates.push(before.replace(exact, () => ''));
      asNow(edit.keys);
      candidates.push(pruneText(removeAt(before, edit.keys), container, edit.created));
    }
  } else {
    if (!Array.isArray(current)) return before;
    // Ours: the item as we wrote it, else (edited since) the one holding our command.
    const at =
      edit.kind === 'json-item'
        ? current.indexOf(edit.item)
        : ((i) => (i >= 0 ? i : current.findIndex((v) => holds(v, edit.marker))))(current.findIndex((v) => isDeepStrictEqual(v, edit.value)));
    if (at < 0) return before;
    setAt(
      expected,
      edit.keys,
      current.filter((_, i) => i !== at),
    );
    pruneValue(expected, edit.keys, edit.created);
    if (once) candidates.push(before.replace(exact, () => ''));
    asNow([...edit.keys, at]);
    candidates.push(pruneText(removeAt(before, [...edit.keys, at]), edit.keys, edit.created));
  }
  const ok = candidates.find((c) => sameAs(c, expected));
  if (ok === undefined) throw new Refusal(`cannot remove the ${SERVER} entry from ${path} safely (it changed since setup); remove it by hand`, path);
  return ok;
}

/** The text without one edit; null: the file goes. */
function undoEdit(path: string, e: Edit, before: string): { after: string | null; note?: string } {
  switch (e.kind) {
    case 'json-entry':
    case 'json-item':
    case 'json-append':
      return { after: undoJson(path, e, before) };
    case 'block': {
      const markers = e.syntax === 'toml' ? TOML_MARKERS : MD_MARKERS;
      return { after: findBlock(before, markers, path) ? dropBlock(before, markers, e.prefix, path) : before };
    }
    case 'whole':
      if (before === e.content) return { after: e.replaced ?? null };
      return { after: before, note: `${path} changed since setup, so it was left in place; delete it if you no longer want it` };
  }
}

function isEmptyDoc(rec: FileRecord, text: string): boolean {
  if (text.trim() === '') return true;
  return rec.edits.some((e) => e.kind.startsWith('json-')) && sameAs(text, {});
}

/** The change that undoes one file's record, newest edit first. */
function undoFile(rec: FileRecord): Change {
  const before = readText(rec.path);
  const base = { path: rec.path, before, record: rec };
  if (before === null) return { ...base, after: null, action: 'unchanged' };
  let after: string | null = before;
  const notes: string[] = [];
  for (const e of [...rec.edits].reverse()) {
    if (after === null) break;
    const r = undoEdit(rec.path, e, after);
    after = r.after;
    if (r.note) notes.push(r.note);
  }
  if (after !== null && !rec.existed && isEmptyDoc(rec, after)) after = null;
  const action: FileAction = after === null ? 'removed' : after === before ? 'unchanged' : rec.existed ? 'restored' : 'updated';
  return { ...base, after, action, ...(notes.length ? { note: notes.join('; ') } : {}) };
}

/** Every change unsetup would make to undo `records`, or a Refusal before anything is written. */
export function planUnsetup(records: FileRecord[]): Change[] {
  return records.map(undoFile);
}
