/**
 * Which IP addresses a guarded outbound call may reach (architecture rule 8): public
 * space only, unless an operator's allow list says otherwise; the deny list wins over
 * everything, public space included. Pure: the DNS resolution and the pinned connection
 * live in infra's address guard (`@casebook/infra/http/address-guard`), which calls
 * `checkAddress` on every address a name resolves to.
 *
 * @example
 * const policy = createAddressPolicy({ allow: ["127.0.0.1/32"], deny: ["203.0.113.0/24"] });
 * checkAddress("127.0.0.1", policy);        // { allowed: true, addressClass: "loopback" }
 * checkAddress("::ffff:10.0.0.5", policy);  // { allowed: false, addressClass: "private", reason: "private address" }
 */
import { type AddressClass, classifyIp } from "./address-class.ts";
import { type Cidr, cidrContains, embeddedIpv4, type IpAddress, parseCidr, parseIp } from "./ip-address.ts";

/** Most ranges in each of the allow and deny lists: each address is checked against all. */
export const MAX_POLICY_RANGES = 256;

export interface AddressPolicy {
  readonly allow: readonly Cidr[];
  readonly deny: readonly Cidr[];
}

export interface AddressPolicyInput {
  /** CIDRs that may be called even though not public, e.g. "127.0.0.1/32" in tests. */
  allow?: readonly string[];
  /** CIDRs never called, even if public, e.g. this deployment's own public ranges. */
  deny?: readonly string[];
}

/**
 * A policy from configuration; a malformed range fails with a RangeError naming it.
 *
 * @example
 * createAddressPolicy({ allow: ["10.1.0.0/16"] });
 */
export function createAddressPolicy(input: AddressPolicyInput = {}): AddressPolicy {
  const allow = (input.allow ?? []).map(parseCidr);
  const deny = (input.deny ?? []).map(parseCidr);
  if (allow.length > MAX_POLICY_RANGES || deny.length > MAX_POLICY_RANGES) {
    throw new RangeError(`allow and deny lists hold at most ${MAX_POLICY_RANGES} ranges each`);
  }
  return Object.freeze({ allow, deny });
}

export type AddressVerdict =
  | { readonly allowed: true; readonly addressClass: AddressClass }
  | { readonly allowed: false; readonly addressClass: AddressClass | "invalid"; readonly reason: string };

/** Matches the address itself and, for IPv4-mapped/NAT64/6to4 forms, the IPv4 it carries. */
function inAny(ranges: readonly Cidr[], ip: IpAddress): boolean {
  const carried = embeddedIpv4(ip);
  return ranges.some(
    (cidr) => cidrContains(cidr, ip) || (carried !== undefined && cidrContains(cidr, carried)),
  );
}

/**
 * May a guarded call connect to this address? Deny list, then allow list, then public only.
 *
 * @example
 * checkAddress("127.0.0.1", createAddressPolicy({ allow: ["127.0.0.1/32"] })); // { allowed: true, addressClass: "loopback" }
 */
export function checkAddress(address: string | IpAddress, policy: AddressPolicy): AddressVerdict {
  const ip = typeof address === "string" ? parseIp(address) : address;
  if (ip === undefined) return { allowed: false, addressClass: "invalid", reason: "not an IP address" };
  const addressClass = classifyIp(ip);
  if (inAny(policy.deny, ip)) return { allowed: false, addressClass, reason: "in the deny list" };
  if (addressClass === "public" || inAny(policy.allow, ip)) return { allowed: true, addressClass };
  return { allowed: false, addressClass, reason: `${addressClass} address` };
}

/**
 * RFC 6761: `localhost` and `*.localhost` always mean this machine, whatever a resolver
 * says, so a guard refuses them by name before any lookup.
 *
 * @example
 * isLocalhostName("api.localhost."); // true
 */
export function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}
