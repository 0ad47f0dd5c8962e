/**
 * NATS subjects: dot-separated tokens (`metrics.cpu.host-1`), and filters where `*` stands
 * for one token and `>` for one or more trailing tokens (`metrics.>`, `chat.*.room-7`).
 * Both stream backends route and filter with these rules, so a filter means the same
 * thing on the in-process twin as on JetStream.
 *
 * @example
 * subjectMatches("metrics.>", "metrics.cpu.host-1"); // true
 * subjectMatches("metrics.*", "metrics.cpu.host-1"); // false: * is one token
 * filtersOverlap("metrics.>", "*.cpu");              // true: metrics.cpu matches both
 */
import { streamErrors } from "./stream-errors.ts";

/** NATS's own bound on a subject is the max payload; ours is tighter so keys stay readable. */
export const MAX_SUBJECT_LENGTH = 256;

// A token is visible ASCII without the separator and the wildcards; NATS also refuses spaces.
const TOKEN = /^[\x21-\x7e]+$/;

function tokensOf(subject: string, wildcards: boolean): string[] | undefined {
  if (subject.length === 0 || subject.length > MAX_SUBJECT_LENGTH) return undefined;
  const tokens = subject.split(".");
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as string;
    if (wildcards && token === "*") continue;
    if (wildcards && token === ">" && i === tokens.length - 1) continue;
    if (!TOKEN.test(token) || token.includes("*") || token.includes(">")) return undefined;
  }
  return tokens;
}

/** A subject to publish on: no wildcards. Throws STREAM_SUBJECT_INVALID. */
export function checkSubject(subject: string): string {
  if (!tokensOf(subject, false)) throw streamErrors.create("STREAM_SUBJECT_INVALID", { fields: { subject } });
  return subject;
}

/** A filter (a stream's subjects, a consumer's filter): wildcards allowed. Throws STREAM_SUBJECT_INVALID. */
export function checkFilter(filter: string): string {
  if (!tokensOf(filter, true)) throw streamErrors.create("STREAM_SUBJECT_INVALID", { fields: { filter } });
  return filter;
}

/** True when the (wildcard-free) `subject` matches `filter`. */
export function subjectMatches(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    const token = f[i];
    if (token === ">") return s.length > i;
    if (i >= s.length) return false;
    if (token !== "*" && token !== s[i]) return false;
  }
  return f.length === s.length;
}

/** True when some subject matches both filters (JetStream refuses two streams whose subjects overlap). */
export function filtersOverlap(a: string, b: string): boolean {
  const x = a.split(".");
  const y = b.split(".");
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const p = x[i];
    const q = y[i];
    if (p === ">" || q === ">") return p !== undefined && q !== undefined;
    if (p === undefined || q === undefined) return false;
    if (p !== "*" && q !== "*" && p !== q) return false;
  }
  return true;
}
