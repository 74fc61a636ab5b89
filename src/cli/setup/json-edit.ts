// Byte-exact edits of JSON (and JSONC) files. jsonc-parser parses; the text we insert is composed
// here in the file's own indentation and line ending, because modify() with formatting re-formats
// neighbouring members (and can drop comments). Every edit is checked by parsing the result.
import { isDeepStrictEqual } from 'node:util';
import { findNodeAtLocation, getNodeValue, modify, applyEdits, parseTree, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';
import { Refusal } from './refusal.js';

export interface JsonDoc {
  text: string;
  root: Node | undefined;
  eol: string;
  /** One level of indentation; '' for a minified file. */
  unit: string;
}

/** The new text, and the piece inserted into it: lead + body + trail (body is the value we own). */
export interface Insertion {
  text: string;
  lead: string;
  body: string;
  trail: string;
}

const OPTS = { allowTrailingComma: true, disallowComments: false } as const;

function where(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return `line ${line}, column ${offset - before.lastIndexOf('\n')}`;
}

export function parseJson(text: string, file: string): JsonDoc {
  if (text.trim() === '') return { text, root: undefined, eol: text.includes('\r\n') ? '\r\n' : '\n', unit: '  ' };
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, OPTS);
  const e = errors[0];
  if (e) throw new Refusal(`cannot parse ${file}: ${printParseErrorCode(e.error)} at ${where(text, e.offset)}; fix or move it, then run again`, file);
  if (root && root.type !== 'object') throw new Refusal(`cannot use ${file}: its top level is a ${root.type}, not an object`, file);
  return { text, root, eol: text.includes('\r\n') ? '\r\n' : '\n', unit: detectUnit(text) };
}

/** Plain values: jsonc-parser builds prototype-less objects, which deep-equality tells apart. */
const plain = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

export const valueOf = (doc: JsonDoc): Record<string, unknown> => (doc.root ? (plain(getNodeValue(doc.root)) as Record<string, unknown>) : {});

function detectUnit(text: string): string {
  const m = /^([ \t]+)"/m.exec(text);
  if (m?.[1]) return m[1].startsWith('\t') ? '\t' : m[1];
  // A one-line file with members is minified: keep it so.
  return !text.trim().includes('\n') && /"\s*:/.test(text) ? '' : '  ';
}

const lineStart = (text: string, offset: number): number => text.lastIndexOf('\n', offset - 1) + 1;
const lineIndent = (text: string, offset: number): string => /^[ \t]*/.exec(text.slice(lineStart(text, offset), offset))![0];
const ownsLine = (text: string, offset: number): boolean => /^[ \t]*$/.test(text.slice(lineStart(text, offset), offset));

export function formatValue(doc: JsonDoc, value: unknown, indent: string, inline: boolean): string {
  if (inline || !doc.unit) return JSON.stringify(value);
  return JSON.stringify(value, null, doc.unit).replace(/\n/g, doc.eol + indent);
}

interface Slot {
  offset: number;
  before: string;
  after: string;
  indent: string;
  inline: boolean;
}

/** Where a new member of `container` goes: after its last member, in its layout. */
function slotIn(doc: JsonDoc, container: Node): Slot {
  const { text, eol, unit } = doc;
  const kids = container.children ?? [];
  const open = container.offset;
  const close = open + container.length - 1;
  const oneLine = !text.slice(open, close).includes('\n');
  if (kids.length > 0) {
    const last = kids[kids.length - 1]!;
    const end = last.offset + last.length;
    if (oneLine || !unit) return { offset: end, before: unit ? ', ' : ',', after: '', indent: '', inline: true };
    const first = kids[0]!;
    const indent = ownsLine(text, first.offset) ? lineIndent(text, first.offset) : lineIndent(text, open) + unit;
    return { offset: end, before: `,${eol}${indent}`, after: '', indent, inline: false };
  }
  if (!unit) return { offset: open + 1, before: '', after: '', indent: '', inline: true };
  const base = lineIndent(text, open);
  const indent = base + unit;
  // `{\n  }` keeps its own line break before the closing bracket; `{}` gets one.
  return { offset: open + 1, before: eol + indent, after: oneLine ? eol + base : '', indent, inline: false };
}

const splice = (text: string, offset: number, insert: string): string => text.slice(0, offset) + insert + text.slice(offset);

/** Inserts `body` (rendered at an indentation) under `keys`, creating missing parent objects. `leaf`
 *  is the member's key, or null to add an array item. */
function insert(doc: JsonDoc, keys: string[], leaf: string | null, render: (indent: string, inline: boolean) => string, file: string): Insertion & { created: number } {
  const { eol, unit } = doc;
  let node = doc.root;
  let depth = 0;
  if (node) {
    for (const k of keys) {
      const next = findNodeAtLocation(node, [k]);
      if (!next) break;
      const want = depth === keys.length - 1 && leaf === null ? 'array' : 'object';
      if (next.type !== want) throw new Refusal(`cannot use ${file}: "${keys.slice(0, depth + 1).join('.')}" is a ${next.type}, not an ${want}`, file);
      node = next;
      depth++;
    }
  }
  const missing = keys.slice(depth);
  // Wrap the body in the missing containers, innermost last.
  const wrap = (indent: string, inline: boolean): { lead: string; body: string; trail: string } => {
    let lead = '';
    let trail = '';
    let ind = indent;
    const nl = (i: string): string => (inline ? '' : eol + i);
    missing.forEach((k, i) => {
      const isArray = i === missing.length - 1 && leaf === null;
      lead += `${JSON.stringify(k)}:${inline ? '' : ' '}${isArray ? '[' : '{'}${nl(ind + unit)}`;
      trail = `${nl(ind)}${isArray ? ']' : '}'}${trail}`;
      ind += unit;
    });
    if (leaf !== null) lead += `${JSON.stringify(leaf)}:${inline ? '' : ' '}`;
    return { lead, body: render(ind, inline), trail };
  };
  if (!node) {
    // No document yet: the whole skeleton, then whatever whitespace was there.
    const inner = wrap(unit, !unit);
    const nl = unit ? eol : '';
    const lead = `{${nl}${unit}${inner.lead}`;
    const trail = `${inner.trail}${nl}}${/^\s/.test(doc.text) ? '' : eol}`;
    return { text: lead + inner.body + trail + doc.text, lead, body: inner.body, trail, created: missing.length };
  }
  const slot = slotIn(doc, node);
  const inner = wrap(slot.indent, slot.inline);
  const lead = slot.before + inner.lead;
  const trail = inner.trail + slot.after;
  return { text: splice(doc.text, slot.offset, lead + inner.body + trail), lead, body: inner.body, trail, created: missing.length };
}

export function insertMember(doc: JsonDoc, keys: string[], value: unknown, file: string): Insertion & { created: number } {
  const parents = keys.slice(0, -1);
  return insert(doc, parents, keys[keys.length - 1]!, (indent, inline) => formatValue(doc, value, indent, inline), file);
}

/** Appends `item` to the array at `keys` (created with its missing parents), in the file's layout. */
export function insertItem(doc: JsonDoc, keys: string[], item: unknown, file: string): Insertion & { created: number } {
  return insert(doc, keys, null, (indent, inline) => formatValue(doc, item, indent, inline), file);
}

/** Replaces the value at `keys` (an object member or an array item) in place; returns the new text
 *  and the raw text it replaced. */
export function replaceValue(doc: JsonDoc, keys: (string | number)[], value: unknown): { text: string; body: string; old: string } {
  const v = findNodeAtLocation(doc.root!, keys)!;
  // A member is laid out from its property's line; an array item from its own.
  const at = v.parent!.type === 'property' ? v.parent! : v;
  const container = at.parent!;
  const inline = !doc.text.slice(container.offset, container.offset + container.length).includes('\n');
  const body = formatValue(doc, value, lineIndent(doc.text, at.offset), inline);
  const old = doc.text.slice(v.offset, v.offset + v.length);
  return { text: doc.text.slice(0, v.offset) + body + doc.text.slice(v.offset + v.length), body, old };
}

/** The text with the value at `keys` replaced by `raw` as is. */
export function spliceValue(doc: JsonDoc, keys: string[], raw: string): string {
  const v = findNodeAtLocation(doc.root!, keys)!;
  return doc.text.slice(0, v.offset) + raw + doc.text.slice(v.offset + v.length);
}

export function rawValue(doc: JsonDoc, keys: (string | number)[]): string | undefined {
  const v = doc.root && findNodeAtLocation(doc.root, keys);
  return v ? doc.text.slice(v.offset, v.offset + v.length) : undefined;
}

/** The text of item `at` of the array at `keys`, with the separator that goes with it (the one
 *  before it, or for a first item the one after it): what removing just that item takes out. */
export function itemPiece(doc: JsonDoc, keys: string[], at: number): { lead: string; body: string; trail: string } {
  const kids = findNodeAtLocation(doc.root!, keys)!.children!;
  const k = kids[at]!;
  const body = doc.text.slice(k.offset, k.offset + k.length);
  const prev = kids[at - 1];
  const next = kids[at + 1];
  if (prev) return { lead: doc.text.slice(prev.offset + prev.length, k.offset), body, trail: '' };
  if (next) return { lead: '', body, trail: doc.text.slice(k.offset + k.length, next.offset) };
  return { lead: '', body, trail: '' };
}

export const getAt = (doc: JsonDoc, keys: string[]): unknown => {
  const n = doc.root && findNodeAtLocation(doc.root, keys);
  return n ? plain(getNodeValue(n)) : undefined;
};

/** Parses text that must hold `expected`; any other outcome means our edit went wrong. */
export function sameAs(text: string, expected: unknown): boolean {
  const errors: ParseError[] = [];
  if (text.trim() === '') return isDeepStrictEqual(expected, {});
  const root = parseTree(text, errors, OPTS);
  if (errors.length) return false;
  return isDeepStrictEqual(root ? plain(getNodeValue(root)) : {}, expected);
}

/** jsonc-parser's own removal (no formatting): the fallback when our inserted text was edited. */
export function removeAt(text: string, keys: (string | number)[]): string {
  return applyEdits(text, modify(text, keys, undefined, {}));
}

export const count = (text: string, part: string): number => (part ? text.split(part).length - 1 : 0);
