/**
 * The SSRF policy on endpoint URLs (architecture rule 8; issue 4): a subscription URL is
 * an instruction, from a tenant, to make our servers send a request somewhere. Without a
 * guard it reaches the metadata service, the database, the admin port on localhost.
 *
 * Two checks use this policy: at registration (`validateEndpointUrl`: scheme, shape,
 * IP literals, `localhost` names) and at send time (`checkAddress`, called by the
 * sender's resolver hook on every address a host name resolves to, then connected to
 * as checked, so a DNS answer that changes after registration cannot slip through).
 * Loopback, private and the rest are refused unless in the operator's allow list
 * (tests allow 127.0.0.1); the deny list wins over everything, public space included.
 *
 * @example
 * const policy = createUrlPolicy({ allowHttp: false, allow: [], deny: [] });
 * validateEndpointUrl("https://hooks.example.com/in", policy); // { url, hostname: "hooks.example.com", … }
 * validateEndpointUrl("https://[::ffff:169.254.169.254]/", policy); // throws WEBHOOK_URL_FORBIDDEN
 * checkAddress("10.0.0.5", policy); // { allowed: false, addressClass: "private" }
 */
import { type AddressClass, classifyIp } from "./address-class.ts";
import { deliveryErrors } from "./delivery-errors.ts";
import { type Cidr, cidrContains, embeddedIpv4, type IpAddress, parseCidr, parseIp } from "./ip-address.ts";

/** Longest endpoint URL accepted, in characters. */
export const URL_LENGTH_MAX = 2_048;
/** Most ranges in each of the allow and deny lists: each address is checked against all. */
export const POLICY_RANGES_MAX = 256;

export interface UrlPolicy {
  /** Plain http endpoints; off by default (payloads and signatures in clear text). */
  readonly allowHttp: boolean;
  readonly allow: readonly Cidr[];
  readonly deny: readonly Cidr[];
}

export interface UrlPolicyInput {
  allowHttp?: boolean;
  /** CIDRs that may be called even though not public, e.g. "127.0.0.1/32" in tests. */
  allow?: readonly string[];
  /** CIDRs never called, even if public, e.g. this deployment's own public ranges. */
  deny?: readonly string[];
}

/** A policy from configuration; a malformed range fails with a RangeError naming it. */
export function createUrlPolicy(input: UrlPolicyInput = {}): UrlPolicy {
  const allow = (input.allow ?? []).map(parseCidr);
  const deny = (input.deny ?? []).map(parseCidr);
  if (allow.length > POLICY_RANGES_MAX || deny.length > POLICY_RANGES_MAX) {
    throw new RangeError(`allow and deny lists hold at most ${POLICY_RANGES_MAX} ranges each`);
  }
  return Object.freeze({ allowHttp: input.allowHttp ?? false, allow, deny });
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
 * May webhooks connect to this address? Deny list, then allow list, then public only.
 *
 * @example
 * checkAddress("127.0.0.1", createUrlPolicy({ allow: ["127.0.0.1/32"] })); // { allowed: true, addressClass: "loopback" }
 */
export function checkAddress(address: string | IpAddress, policy: UrlPolicy): AddressVerdict {
  const ip = typeof address === "string" ? parseIp(address) : address;
  if (ip === undefined) return { allowed: false, addressClass: "invalid", reason: "not an IP address" };
  const addressClass = classifyIp(ip);
  if (inAny(policy.deny, ip)) return { allowed: false, addressClass, reason: "in the deny list" };
  if (addressClass === "public" || inAny(policy.allow, ip)) return { allowed: true, addressClass };
  return { allowed: false, addressClass, reason: `${addressClass} address` };
}

export interface EndpointUrl {
  readonly url: URL;
  /** Host name without brackets, as given to the resolver and used for TLS SNI. */
  readonly hostname: string;
  readonly port: number;
  /** Set when the host is an IP literal: the sender connects to it without resolving. */
  readonly ip?: IpAddress;
}

function invalid(reason: string): Error {
  return deliveryErrors.create("WEBHOOK_URL_INVALID", { fields: { reason } });
}

function forbidden(host: string, addressClass: string): Error {
  return deliveryErrors.create("WEBHOOK_URL_FORBIDDEN", { fields: { host, addressClass } });
}

/**
 * Parses and checks an endpoint URL at registration and again before each send.
 * Host names are checked when they resolve (see workers/address-guard.ts).
 */
export function validateEndpointUrl(text: string, policy: UrlPolicy): EndpointUrl {
  if (text.length > URL_LENGTH_MAX) throw invalid(`longer than ${URL_LENGTH_MAX} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid("not an absolute URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw invalid("scheme must be https");
  if (url.protocol === "http:" && !policy.allowHttp) {
    throw deliveryErrors.create("WEBHOOK_URL_INSECURE", { fields: { scheme: "http" } });
  }
  // Credentials in a URL end up in logs and Referer-like places; secrets go in the signature.
  if (url.username !== "" || url.password !== "") throw invalid("credentials in the URL");
  if (url.hash !== "") throw invalid("a fragment is never sent; remove it");
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (hostname === "") throw invalid("no host");
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  const ip = parseIp(hostname);
  if (ip !== undefined) {
    const verdict = checkAddress(ip, policy);
    if (!verdict.allowed) throw forbidden(hostname, verdict.addressClass);
    return { url, hostname, port, ip };
  }
  // RFC 6761: these names always mean this machine, whatever a resolver says.
  const name = hostname.toLowerCase().replace(/\.$/, "");
  if (name === "localhost" || name.endsWith(".localhost")) throw forbidden(hostname, "loopback");
  return { url, hostname, port };
}
