/**
 * The SSRF policy on endpoint URLs (architecture rule 8; issue 4): a subscription URL is
 * an instruction, from a tenant, to make our servers send a request somewhere. Without a
 * guard it reaches the metadata service, the database, the admin port on localhost.
 *
 * Two checks use this policy: at registration (`validateEndpointUrl`: scheme, shape,
 * IP literals, `localhost` names) and at send time (kit's `checkAddress`, called by
 * infra's address guard on every address a host name resolves to, then connected to
 * as checked, so a DNS answer that changes after registration cannot slip through).
 * Loopback, private and the rest are refused unless in the operator's allow list
 * (tests allow 127.0.0.1); the deny list wins over everything, public space included.
 * The address rules are kit's (`address-policy.ts`); this file adds webhooks' URL rules.
 *
 * @example
 * const policy = createUrlPolicy({ allowHttp: false, allow: [], deny: [] });
 * validateEndpointUrl("https://hooks.example.com/in", policy); // { url, hostname: "hooks.example.com", … }
 * validateEndpointUrl("https://[::ffff:169.254.169.254]/", policy); // throws WEBHOOK_URL_FORBIDDEN
 * checkAddress("10.0.0.5", policy); // { allowed: false, addressClass: "private" }
 */
import {
  type AddressPolicy,
  checkAddress,
  createAddressPolicy,
  isLocalhostName,
} from "@casebook/kit/address-policy";
import { type IpAddress, parseIp } from "@casebook/kit/ip-address";
import { deliveryErrors } from "../errors.ts";

/** Longest endpoint URL accepted, in characters. */
export const MAX_URL_LENGTH = 2_048;

/** The address policy (kit's: allow and deny lists, public only) plus webhooks' own scheme rule. */
export interface UrlPolicy extends AddressPolicy {
  /** Plain http endpoints; off by default (payloads and signatures in clear text). */
  readonly allowHttp: boolean;
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
  const addresses = createAddressPolicy(input);
  return Object.freeze({ ...addresses, allowHttp: input.allowHttp ?? false });
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
 * Host names are checked when they resolve (infra/http/address-guard.ts).
 */
export function validateEndpointUrl(text: string, policy: UrlPolicy): EndpointUrl {
  if (text.length > MAX_URL_LENGTH) throw invalid(`longer than ${MAX_URL_LENGTH} characters`);
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
  if (isLocalhostName(hostname)) throw forbidden(hostname, "loopback");
  return { url, hostname, port };
}
