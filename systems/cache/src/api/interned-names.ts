/**
 * Command names decoded once, not once per request. Every request starts with its command's
 * name, and a node sees only a few dozen of them: decoding each one anew costs a native
 * `latin1Slice` call, a string allocation, and the string's hash when the command table is
 * searched. Here a name's bytes are hashed in JS (a name is a few bytes) into a small table
 * of strings already decoded; a match returns that same string, whose hash V8 has cached.
 *
 * Bounded: `NAME_SLOTS` strings of at most `MAX_INTERNED_NAME_BYTES` each. Two names that
 * share a slot replace each other (a miss decodes as before), so unknown or random names
 * cost a little churn, never memory.
 *
 * @example
 * const name = internedName(Buffer.from("GET"), 0, 3); // "GET"
 * internedName(Buffer.from("xGET"), 1, 3) === name;     // true: the same string
 */

/** Node's latin1 decoder without `toString`'s encoding-name dispatch. */
interface Latin1Buffer extends Buffer {
  latin1Slice(start: number, end: number): string;
}

/** Longest name kept (Redis's longest command name is 24 bytes); longer ones are decoded each time. */
export const MAX_INTERNED_NAME_BYTES = 32;
/** A power of two, several times the number of command spellings a node sees in practice. */
const NAME_SLOTS = 256;

const slots: string[] = new Array<string>(NAME_SLOTS).fill("");

/** `buf[start, start + length)` as a latin1 string; `length` must be at most MAX_INTERNED_NAME_BYTES. */
export function internedName(buf: Buffer, start: number, length: number): string {
  const end = start + length;
  let hash = length;
  for (let i = start; i < end; i++) hash = (Math.imul(hash, 31) + buf[i]!) | 0;
  const slot = hash & (NAME_SLOTS - 1);
  const cached = slots[slot]!;
  if (cached.length === length && sameBytes(cached, buf, start)) return cached;
  const name = (buf as Latin1Buffer).latin1Slice(start, end);
  slots[slot] = name;
  return name;
}

function sameBytes(text: string, buf: Buffer, start: number): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) !== buf[start + i]) return false;
  return true;
}
