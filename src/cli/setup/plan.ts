// Planning: every target is read, parsed and edited in memory first, so a refusal (unparseable
// file, an m4a entry someone else wrote) leaves nothing changed anywhere.
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parse as parseToml } from '@decimalturn/toml-patch';
import { parse as parseJsonc } from 'jsonc-parser';
import { dropBlock, findBlock, MD_MARKERS, putBlock, TOML_MARKERS } from './block-edit.js';
import { count, getAt, insertItem, insertMember, parseJson, rawValue, removeAt, replaceValue, sameAs, spliceValue, valueOf } from './json-edit.js';
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

function planJsonEntry(t: Extract<Target, { kind: 'json-entry' }>, before: string | null, old: FileRecord | undefined, force: boolean): { after: string; edit: Edit } {
  const doc = parseJson(before ?? '', t.path);
  const current = getAt(doc, t.keys);
  const expected = setAt(clone(valueOf(doc)), t.keys, t.value);
  const prior = old?.edit.kind === 'json-entry' ? old.edit : undefined;
  const check = (text: string): string => {
    if (!sameAs(text, expected)) throw new Refusal(`could not edit ${t.path} safely (the result would not parse as intended); nothing was changed`, t.path);
    return text;
  };
  if (current === undefined) {
    const ins = insertMember(doc, t.keys, t.value, t.path);
    return { after: check(ins.text), edit: { kind: 'json-entry', keys: t.keys, value: t.value, lead: ins.lead, body: ins.body, trail: ins.trail, created: ins.created } };
  }
  if (isDeepStrictEqual(current, t.value)) {
    const edit: Edit = prior ?? { kind: 'json-entry', keys: t.keys, value: t.value, lead: '', body: rawValue(doc, t.keys) ?? '', trail: '', created: 0 };
    return { after: doc.text, edit };
  }
  const ours = prior !== undefined && isDeepStrictEqual(current, prior.value);
  if (!ours && !force)
    throw new Refusal(`${t.path} already has an MCP server named "${SERVER}" that m4a setup did not write; rename or remove it, or run again with --force (it is put back by unsetup)`, t.path);
  const r = replaceValue(doc, t.keys, t.value);
  const edit: Edit = ours
    ? { ...prior, value: t.value, body: r.body }
    : { kind: 'json-entry', keys: t.keys, value: t.value, lead: '', body: r.body, trail: '', created: 0, replaced: prior?.replaced ?? r.old };
  return { after: check(r.text), edit };
}

function planJsonItem(t: Extract<Target, { kind: 'json-item' }>, before: string | null, old: FileRecord | undefined): { after: string; edit: Edit | null } {
  const doc = parseJson(before ?? '', t.path);
  const current = getAt(doc, t.keys);
  if (Array.isArray(current) && current.includes(t.item)) return { after: doc.text, edit: old?.edit.kind === 'json-item' ? old.edit : null };
  const ins = insertItem(doc, t.keys, t.item, t.path);
  const expected = setAt(clone(valueOf(doc)), t.keys, [...(Array.isArray(current) ? current : []), t.item]);
  if (!sameAs(ins.text, expected)) throw new Refusal(`could not edit ${t.path} safely; nothing was changed`, t.path);
  return { after: ins.text, edit: { kind: 'json-item', keys: t.keys, item: t.item, lead: ins.lead, trail: ins.trail, created: ins.created } };
}

function planBlock(t: Extract<Target, { kind: 'block' }>, before: string | null, old: FileRecord | undefined): { after: string; edit: Edit } {
  const text = before ?? '';
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
      throw new Refusal(`adding [mcp_servers.${SERVER}] would make ${t.path} invalid TOML (${err instanceof Error ? err.message.split('\n').pop() : String(err)}); nothing was changed`, t.path);
    }
    if (!isDeepStrictEqual(JSON.parse(JSON.stringify(ours)), t.table)) throw new Refusal(`could not add [mcp_servers.${SERVER}] to ${t.path} as intended; nothing was changed`, t.path);
  }
  const priorPrefix = old?.edit.kind === 'block' ? old.edit.prefix : '';
  return { after: put.text, edit: { kind: 'block', syntax: t.syntax, prefix: put.prefix ?? priorPrefix, body: t.body } };
}

function planWhole(t: Extract<Target, { kind: 'whole' }>, before: string | null, old: FileRecord | undefined, force: boolean): { after: string; edit: Edit } {
  const prior = old?.edit.kind === 'whole' ? old.edit : undefined;
  const edit: Edit = { kind: 'whole', content: t.content, ...(prior?.replaced !== undefined ? { replaced: prior.replaced } : {}) };
  if (before === null || before === t.content || before === prior?.content) return { after: t.content, edit };
  if (!force) throw new Refusal(`${t.path} exists and was not written by m4a setup; move it away, or run again with --force (it is put back by unsetup)`, t.path);
  return { after: t.content, edit: { ...edit, replaced: prior?.replaced ?? before } };
}

/** Every change setup would make, or a Refusal before anything is written. `recordOf` gives the
 *  state's record for a path (ours, or another setup's). */
export function planSetup(targets: Target[], recordOf: (path: string) => FileRecord | undefined, force: boolean): Change[] {
  return targets.map((t) => {
    const before = readText(t.path);
    const old = recordOf(t.path);
    const planned =
      t.kind === 'json-entry' ? planJsonEntry(t, before, old, force) : t.kind === 'json-item' ? planJsonItem(t, before, old) : t.kind === 'block' ? planBlock(t, before, old) : planWhole(t, before, old, force);
    const record: FileRecord | null = planned.edit
      ? { path: t.path, existed: old?.existed ?? before !== null, dirs: old?.dirs ?? missingDirs(t.path), backup: old?.backup ?? false, edit: planned.edit }
      : null;
    const change: Change = { path: t.path, before, after: planned.after, action: actionOf(before, planned.after), record };
    if (t.kind === 'json-item' && before !== null) {
      const disabled = getAt(parseJson(before, t.path), ['disabledMcpjsonServers']);
      if (Array.isArray(disabled) && disabled.includes(t.item)) change.note = `${t.path} lists "${t.item}" in disabledMcpjsonServers, which wins over approval: remove it there`;
    }
    return change;
  });
}

// ---- unsetup ----

function undoJson(rec: FileRecord, edit: Extract<Edit, { kind: 'json-entry' | 'json-item' }>, before: string): string {
  const doc = parseJson(before, rec.path);
  const current = getAt(doc, edit.keys);
  const expected = clone(valueOf(doc));
  const candidates: string[] = [];
  const exact = edit.lead + (edit.kind === 'json-entry' ? edit.body : JSON.stringify(edit.item)) + edit.trail;
  const once = (edit.lead || edit.trail) && count(before, exact) === 1;
  if (edit.kind === 'json-entry') {
    if (current === undefined) return before;
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
      candidates.push(pruneText(removeAt(before, edit.keys), container, edit.created));
    }
  } else {
    if (!Array.isArray(current) || !current.includes(edit.item)) return before;
    const at = current.indexOf(edit.item);
    setAt(expected, edit.keys, current.filter((_, i) => i !== at));
    pruneValue(expected, edit.keys, edit.created);
    if (once) candidates.push(before.replace(exact, () => ''));
    candidates.push(pruneText(removeAt(before, [...edit.keys, at]), edit.keys, edit.created));
  }
  const ok = candidates.find((c) => sameAs(c, expected));
  if (ok === undefined) throw new Refusal(`cannot remove the ${SERVER} entry from ${rec.path} safely (it changed since setup); remove it by hand`, rec.path);
  return ok;
}

function isEmptyDoc(rec: FileRecord, text: string): boolean {
  if (text.trim() === '') return true;
  return (rec.edit.kind === 'json-entry' || rec.edit.kind === 'json-item') && sameAs(text, {});
}

/** Every change unsetup would make to undo `records`, or a Refusal before anything is written. */
export function planUnsetup(records: FileRecord[]): Change[] {
  return records.map((rec) => {
    const before = readText(rec.path);
    const base = { path: rec.path, before, record: rec };
    if (before === null) return { ...base, after: null, action: 'unchanged' as const };
    const e = rec.edit;
    let after: string | null;
    let note: string | undefined;
    if (e.kind === 'json-entry' || e.kind === 'json-item') after = undoJson(rec, e, before);
    else if (e.kind === 'block') {
      const markers = e.syntax === 'toml' ? TOML_MARKERS : MD_MARKERS;
      after = findBlock(before, markers, rec.path) ? dropBlock(before, markers, e.prefix, rec.path) : before;
    } else if (before === e.content) after = e.replaced ?? null;
    else {
      after = before;
      note = `${rec.path} changed since setup, so it was left in place; delete it if you no longer want it`;
    }
    if (after !== null && !rec.existed && isEmptyDoc(rec, after)) after = null;
    const action: FileAction = after === null ? 'removed' : after === before ? 'unchanged' : rec.existed ? 'restored' : 'updated';
    return { ...base, after, action, ...(note ? { note } : {}) };
  });
}
