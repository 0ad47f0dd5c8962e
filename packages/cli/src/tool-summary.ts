/**
 * A tool's one-line description for `casebook <system>`: the first sentence of the doc comment
 * that opens its entry file (the comment every entry starts with, by the house style), so a
 * tool is described where it is written and cannot drift from a second copy in the manifest.
 *
 * @example
 * toolSummary("/repo/systems/payments/src/tools/new-key.ts");
 * // "A merchant API key from the running service's admin API, the merchant made first when new."
 */
import { closeSync, openSync, readSync } from "node:fs";

/** Bytes read from the top of the entry: the opening comment is well inside them. */
const HEAD_BYTES = 4_096;
/** A description longer than this is cut (with "…"): it must fit one terminal line beside the command. */
export const MAX_SUMMARY_CHARS = 100;
/** A colon this far in ends a summary ("RL-14 demo: …" keeps going: its colon comes too early). */
const MIN_BEFORE_COLON_CHARS = 30;

function readHead(file: string): string {
  const fd = openSync(file, "r");
  try {
    const buffer = Buffer.alloc(HEAD_BYTES);
    const bytes = readSync(fd, buffer, 0, HEAD_BYTES, 0);
    return buffer.subarray(0, bytes).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** The first sentence of the file's opening `/** … *\/` comment, or undefined (no file, no comment). */
export function toolSummary(file: string): string | undefined {
  let head: string;
  try {
    head = readHead(file);
  } catch {
    return undefined;
  }
  const match = /^(?:#!.*\n)?\s*\/\*\*([\s\S]*?)\*\//.exec(head);
  if (match === null) return undefined;
  const paragraph: string[] = [];
  for (const raw of match[1]!.split("\n")) {
    const line = raw.replace(/^\s*\*\s?/, "").trim();
    if (line === "" && paragraph.length > 0) break;
    if (line !== "") paragraph.push(line);
  }
  const text = paragraph.join(" ");
  const end = text.search(/\.(\s|$)/);
  let sentence = end === -1 ? text : text.slice(0, end + 1);
  // "A receiver for demos: what it does…": past a real opening, a colon ends the summary too.
  const colon = sentence.indexOf(": ", MIN_BEFORE_COLON_CHARS);
  if (colon !== -1) sentence = sentence.slice(0, colon);
  sentence = sentence.replace(/:$/, "");
  if (sentence === "") return undefined;
  return sentence.length > MAX_SUMMARY_CHARS ? `${sentence.slice(0, MAX_SUMMARY_CHARS - 1)}…` : sentence;
}
