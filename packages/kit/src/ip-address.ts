/**
 * IP addresses and CIDR ranges as bytes, for the SSRF guard: parsing is strict (the
 * canonical dotted quad and RFC 4291 text forms, which is what a resolver returns and
 * what a WHATWG URL normalises `0x7f.1` or `2130706433` into), so what is checked is
 * exactly what a socket would connect to.
 *
 * @example
 * const ip = parseIp("::ffff:127.0.0.1");   // { family: 6, bytes: [0,…,0xff,0xff,127,0,0,1] }
 * embeddedIpv4(ip!);                       // { family: 4, bytes: [127, 0, 0, 1] }
 * cidrContains(parseCidr("127.0.0.0/8"), parseIp("127.1.2.3")!); // true
 */

export interface IpAddress {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
}

export interface Cidr {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

const DECIMAL_OCTET = /^(?:0|[1-9]\d{0,2})$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

function parseIpv4(text: string): IpAddress | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const bytes = new Uint8Array(4);
  for (const [i, part] of parts.entries()) {
    if (!DECIMAL_OCTET.test(part) || Number(part) > 255) return undefined;
    bytes[i] = Number(part);
  }
  return { family: 4, bytes };
}

/** Hex groups of one side of "::", an IPv4 tail counting as two groups; undefined if malformed. */
function groupsOf(side: string, mayEndInIpv4: boolean): number[] | undefined {
  if (side === "") return [];
  const parts = side.split(":");
  const groups: number[] = [];
  for (const [i, part] of parts.entries()) {
    if (mayEndInIpv4 && i === parts.length - 1 && part.includes(".")) {
      const v4 = parseIpv4(part);
      if (v4 === undefined) return undefined;
      groups.push((v4.bytes[0]! << 8) | v4.bytes[1]!, (v4.bytes[2]! << 8) | v4.bytes[3]!);
    } else if (HEX_GROUP.test(part)) groups.push(Number.parseInt(part, 16));
    else return undefined;
  }
  return groups;
}

function parseIpv6(text: string): IpAddress | undefined {
  if (text.length > 45) return undefined; // the longest form: 6 groups and a dotted quad
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = groupsOf(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? groupsOf(halves[1]!, true) : [];
  if (head === undefined || tail === undefined) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  for (const [i, group] of groups.entries()) {
    bytes[2 * i] = group >> 8;
    bytes[2 * i + 1] = group & 0xff;
  }
  return { family: 6, bytes };
}

/**
 * An IPv4 or IPv6 address in text form (brackets allowed around IPv6), or undefined.
 * Zone ids (`fe80::1%eth0`) are refused: they name an interface, never a public host.
 */
export function parseIp(text: string): IpAddress | undefined {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  return bare.includes(":") ? parseIpv6(bare) : parseIpv4(bare);
}

/** The text form: dotted quad, or eight lower-case hex groups (not compressed). */
export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) return Array.from(ip.bytes).join(".");
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((ip.bytes[i]! << 8) | ip.bytes[i + 1]!).toString(16));
  return groups.join(":");
}

/**
 * A range "address/prefix" (a bare address is a /32 or /128).
 *
 * @example
 * parseCidr("fc00::/7"); // { family: 6, prefix: 7, bytes: … }
 */
export function parseCidr(text: string): Cidr {
  const slash = text.indexOf("/");
  const ip = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (ip === undefined) throw new RangeError(`not an IP range: ${JSON.stringify(text)}`);
  const bits = ip.family === 4 ? 32 : 128;
  const prefixText = slash < 0 ? String(bits) : text.slice(slash + 1);
  const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : Number.NaN;
  if (!(prefix >= 0 && prefix <= bits)) throw new RangeError(`bad prefix length in ${JSON.stringify(text)}`);
  return { family: ip.family, bytes: ip.bytes, prefix };
}

/** True when `ip` lies in `cidr` (families must match: see embeddedIpv4 for mapped forms). */
export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  if (cidr.family !== ip.family) return false;
  const whole = cidr.prefix >> 3;
  for (let i = 0; i < whole; i++) if (cidr.bytes[i] !== ip.bytes[i]) return false;
  const rest = cidr.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (cidr.bytes[whole]! & mask) === (ip.bytes[whole]! & mask);
}

const IPV4_MAPPED = parseCidr("::ffff:0:0/96");
const NAT64_WELL_KNOWN = parseCidr("64:ff9b::/96");
const SIX_TO_FOUR = parseCidr("2002::/16");

/**
 * The IPv4 address an IPv6 address carries and reaches: IPv4-mapped (::ffff:a.b.c.d,
 * which a dual-stack socket connects to over IPv4), NAT64 (64:ff9b::a.b.c.d) and 6to4
 * (2002:aabb:ccdd::). Without this, ::ffff:127.0.0.1 would pass a check as "IPv6".
 */
export function embeddedIpv4(ip: IpAddress): IpAddress | undefined {
  if (ip.family !== 6) return undefined;
  if (cidrContains(IPV4_MAPPED, ip) || cidrContains(NAT64_WELL_KNOWN, ip)) {
    return { family: 4, bytes: ip.bytes.slice(12, 16) };
  }
  if (cidrContains(SIX_TO_FOUR, ip)) return { family: 4, bytes: ip.bytes.slice(2, 6) };
  return undefined;
}
