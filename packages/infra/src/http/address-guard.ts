/**
 * The connect-time half of the SSRF guard (architecture rule 8), for outbound calls to
 * URLs someone else typed in (a webhook endpoint, a crawler's next link): a `lookup` hook
 * for node:net that resolves a host name, checks EVERY address against the address policy
 * (kit's `address-policy.ts`), and hands the socket only checked addresses. The connection
 * then goes to exactly what was checked: there is no second resolution for a rebinding DNS
 * server to answer differently (check-then-connect, not check-then-resolve-again). One
 * forbidden address refuses the whole name, so a record set mixing a public and a private
 * address cannot win a race between them.
 *
 * node:net skips `lookup` for IP literals: `checkUrlHost` judges those (and `localhost`
 * names) before the request is made; `outbound.ts` calls both.
 *
 * @example
 * const lookup = guardedLookup({ policy, resolver: systemResolver });
 * http.request({ host: "hooks.example.com", lookup, … }); // 10.x answers fail with OUTBOUND_ADDRESS_REFUSED
 */
import { promises as dns, type LookupAddress, type LookupOptions } from "node:dns";
import type { LookupFunction } from "node:net";
import { type AddressPolicy, checkAddress, isLocalhostName } from "@casebook/kit/address-policy";
import { parseIp } from "@casebook/kit/ip-address";
import { outboundErrors } from "./outbound-errors.ts";

/** Resolves a host name to its addresses; injected so tests can play a hostile DNS. */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

/** Addresses of one name considered; a longer answer is cut (and every kept one is checked). */
export const MAX_RESOLVED_ADDRESSES = 16;

/** getaddrinfo, all addresses, in the resolver's order. */
export const systemResolver: Resolver = (hostname) => dns.lookup(hostname, { all: true, order: "verbatim" });

export interface AddressGuardOptions {
  policy: AddressPolicy;
  /** Default: `systemResolver`. */
  resolver?: Resolver;
  /** Told of every address handed to the socket (for logs and tests). */
  onChecked?: (hostname: string, addresses: readonly LookupAddress[]) => void;
}

function dnsFailed(hostname: string, code: string, cause?: unknown) {
  return outboundErrors.create("OUTBOUND_DNS_FAILED", {
    fields: { phase: "dns", hostname, code },
    ...(cause === undefined ? {} : { cause }),
  });
}

function refused(hostname: string, address: string, addressClass: string) {
  return outboundErrors.create("OUTBOUND_ADDRESS_REFUSED", {
    fields: { phase: "policy", hostname, address, addressClass },
  });
}

/**
 * Judges a URL's host before any lookup: an IP literal against the policy (node:net would
 * connect to it without calling `lookup`), a `localhost` name as loopback (RFC 6761).
 * Throws OUTBOUND_ADDRESS_REFUSED; a host name passes, to be checked when it resolves.
 *
 * @example
 * checkUrlHost(new URL("http://[::ffff:127.0.0.1]/"), policy); // throws, addressClass "loopback"
 */
export function checkUrlHost(url: URL, policy: AddressPolicy): void {
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const ip = parseIp(hostname);
  if (ip !== undefined) {
    const verdict = checkAddress(ip, policy);
    if (!verdict.allowed) throw refused(hostname, hostname, verdict.addressClass);
    return;
  }
  if (isLocalhostName(hostname)) throw refused(hostname, hostname, "loopback");
}

/**
 * Resolves and checks a name; the checked addresses, or OUTBOUND_DNS_FAILED /
 * OUTBOUND_ADDRESS_REFUSED.
 *
 * @example
 * const addresses = await resolveChecked("hooks.example.com", { policy }); // [{ address: "93.184.216.34", family: 4 }]
 */
export async function resolveChecked(
  hostname: string,
  options: Pick<AddressGuardOptions, "policy" | "resolver">,
): Promise<LookupAddress[]> {
  let answers: LookupAddress[];
  try {
    answers = await (options.resolver ?? systemResolver)(hostname);
  } catch (error) {
    throw dnsFailed(hostname, (error as NodeJS.ErrnoException).code ?? "EUNKNOWN", error);
  }
  const kept = answers.slice(0, MAX_RESOLVED_ADDRESSES);
  if (kept.length === 0) throw dnsFailed(hostname, "ENODATA");
  for (const answer of kept) {
    const verdict = checkAddress(answer.address, options.policy);
    if (!verdict.allowed) throw refused(hostname, answer.address, verdict.addressClass);
  }
  return kept;
}

/**
 * A node:net `lookup` that only ever yields policy-checked addresses.
 *
 * @example
 * http.request(url, { lookup: guardedLookup({ policy }) });
 */
export function guardedLookup(options: AddressGuardOptions): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    const wanted = (lookupOptions as LookupOptions).family;
    resolveChecked(hostname, options).then(
      (checked) => {
        const family = wanted === 4 || wanted === 6 ? checked.filter((a) => a.family === wanted) : checked;
        options.onChecked?.(hostname, family);
        if (family.length === 0) callback(dnsFailed(hostname, "ENODATA"), "", 0);
        else if ((lookupOptions as LookupOptions).all) callback(null, family);
        else callback(null, family[0]!.address, family[0]!.family);
      },
      (error: Error) => callback(error, "", 0),
    );
  };
}
