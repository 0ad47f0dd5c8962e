/**
 * What kind of address an IP is, for the SSRF guard (architecture rule 8): a guarded
 * outbound call (infra/http/address-guard.ts) reaches only `public` addresses unless an
 * operator's allow list says otherwise. The tables are
 * the IANA special-purpose registries (RFC 6890 and successors) narrowed to what matters
 * for "could this reach something that is not the customer's server": loopback, private
 * networks, link-local (169.254.169.254 is the cloud metadata service), carrier-grade
 * NAT, multicast, and reserved or documentation space. IPv6 outside 2000::/3 (global
 * unicast) is not public; an IPv6 address carrying an IPv4 one is judged by that one.
 *
 * @example
 * classifyIp(parseIp("169.254.169.254")!); // "link-local"
 * classifyIp(parseIp("::ffff:10.0.0.1")!); // "private"
 * classifyIp(parseIp("8.8.8.8")!);         // "public"
 */
import { type Cidr, cidrContains, embeddedIpv4, type IpAddress, parseCidr } from "./ip-address.ts";

export type AddressClass =
  | "public"
  | "unspecified"
  | "loopback"
  | "private"
  | "shared"
  | "link-local"
  | "multicast"
  | "broadcast"
  | "documentation"
  | "benchmarking"
  | "reserved";

type Table = readonly (readonly [Cidr, AddressClass])[];

function table(rows: readonly (readonly [string, AddressClass])[]): Table {
  return rows.map(([cidr, addressClass]) => [parseCidr(cidr), addressClass] as const);
}

// First match wins: narrower ranges come before the ranges that contain them.
const IPV4: Table = table([
  ["0.0.0.0/8", "unspecified"],
  ["10.0.0.0/8", "private"],
  ["100.64.0.0/10", "shared"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.0.0/16", "link-local"],
  ["172.16.0.0/12", "private"],
  ["192.0.0.0/24", "reserved"],
  ["192.0.2.0/24", "documentation"],
  ["192.88.99.0/24", "reserved"],
  ["192.168.0.0/16", "private"],
  ["198.18.0.0/15", "benchmarking"],
  ["198.51.100.0/24", "documentation"],
  ["203.0.113.0/24", "documentation"],
  ["224.0.0.0/4", "multicast"],
  ["255.255.255.255/32", "broadcast"],
  ["240.0.0.0/4", "reserved"],
]);

const IPV6: Table = table([
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["::/96", "reserved"],
  ["64:ff9b:1::/48", "private"],
  ["100::/64", "reserved"],
  ["2001:db8::/32", "documentation"],
  ["2001::/23", "reserved"],
  ["3fff::/20", "documentation"],
  ["fc00::/7", "private"],
  ["fe80::/10", "link-local"],
  ["fec0::/10", "private"],
  ["ff00::/8", "multicast"],
]);

const GLOBAL_UNICAST = parseCidr("2000::/3");

function lookup(rows: Table, ip: IpAddress): AddressClass | undefined {
  for (const [cidr, addressClass] of rows) if (cidrContains(cidr, ip)) return addressClass;
  return undefined;
}

/** The class of an address; anything not listed is public (IPv4) or, for IPv6, public only in 2000::/3. */
export function classifyIp(ip: IpAddress): AddressClass {
  if (ip.family === 4) return lookup(IPV4, ip) ?? "public";
  const carried = embeddedIpv4(ip);
  if (carried !== undefined) return classifyIp(carried);
  return lookup(IPV6, ip) ?? (cidrContains(GLOBAL_UNICAST, ip) ? "public" : "reserved");
}
