/**
 * One line of the edge's click log (edge/nginx-edge-config.ts, the `clicks` format) turned
 * into the visit the origin would have recorded (US-09, US-15): the same time, domain (the
 * Host mapped as the redirect maps it), code, status, referrer, user-agent and client address,
 * so both sources make the same click record. Pure; a line that is not one of ours (bad JSON,
 * a field missing or of the wrong type, a path that is not a code or the base) is undefined:
 * the ingester skips it and counts it.
 *
 * @example
 * visitOfEdgeLine('{"t":1764676800.123,"host":"s.example","uri":"/q3ZxP0a","status":302,"ref":"","ua":"curl/8","ip":"10.0.0.1",...}', (h) => h);
 * // { atMs: 1764676800123, domain: "s.example", code: "q3ZxP0a", status: 302, referrer: undefined, userAgent: "curl/8", ip: "10.0.0.1" }
 */
import { MAX_REFERRER_CHARS, MAX_UA_CHARS } from "./click-buffer.ts";
import type { Visit } from "./visit.ts";

/** A visit path: "/" (the base domain) or "/" and one segment with no slash. */
const VISIT_PATH = /^\/([^/]{0,256})$/;

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

export function visitOfEdgeLine(line: string, domainOf: (host: string) => string): Visit | undefined {
  let entry: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return undefined;
    entry = parsed as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const { t, status } = entry;
  const host = text(entry.host);
  const uri = text(entry.uri);
  const ip = text(entry.ip);
  if (typeof t !== "number" || !Number.isFinite(t) || t <= 0) return undefined;
  if (typeof status !== "number" || !Number.isInteger(status) || status < 100 || status > 599)
    return undefined;
  if (host === undefined || uri === undefined || ip === undefined) return undefined;
  const path = VISIT_PATH.exec(uri);
  if (path === null) return undefined;
  const referrer = text(entry.ref);
  const userAgent = text(entry.ua);
  return {
    atMs: Math.round(t * 1_000),
    domain: domainOf(host),
    code: path[1]!,
    status,
    referrer: referrer === "" ? undefined : referrer?.slice(0, MAX_REFERRER_CHARS),
    userAgent: userAgent === "" ? undefined : userAgent?.slice(0, MAX_UA_CHARS),
    ip,
  };
}
