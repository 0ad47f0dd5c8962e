/**
 * The send-time half of the SSRF guard: a `lookup` hook for node:net that resolves a host
 * name, checks EVERY address against the URL policy, and hands the socket only checked
 * addresses. The connection then goes to exactly what was checked: there is no second
 * resolution for a rebinding DNS server to answer differently (check-then-connect, not
 * check-then-resolve-again). One forbidden address refuses the whole name, so a record
 * set mixing a public and a private address cannot win a race between them.
 *
 * node:net skips `lookup` for IP literals: the sender checks those itself (url-policy).
 *
 * @example
 * const lookup = guardedLookup({ policy, resolver: systemResolver });
 * http.request({ host: "hooks.example.com", lookup, … }); // 10.x answers fail with WEBHOOK_SEND_ADDRESS_REFUSED
 */
import { promises as dns, type LookupAddress, type LookupOptions } from "node:dns";
import type { LookupFunction } from "node:net";
import { deliveryErrors } from "../domain/delivery-errors.ts";
import { checkAddress, type UrlPolicy } from "../domain/url-policy.ts";

/** Resolves a host name to its addresses; injected so tests can play a hostile DNS. */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

/** Addresses of one name considered; a longer answer is cut (and every kept one is checked). */
export const RESOLVED_ADDRESSES_MAX = 16;

/** getaddrinfo, all addresses, in the resolver's order. */
export const systemResolver: Resolver = (hostname) => dns.lookup(hostname, { all: true, order: "verbatim" });

export interface GuardedLookupOptions {
  policy: UrlPolicy;
  resolver: Resolver;
  /** Told of every address handed to the socket (for logs and tests). */
  onChecked?: (hostname: string, addresses: readonly LookupAddress[]) => void;
}

/** Resolves and checks a name; the checked addresses, or a typed error. */
export async function resolveChecked(
  hostname: string,
  options: Pick<GuardedLookupOptions, "policy" | "resolver">,
): Promise<LookupAddress[]> {
  let answers: LookupAddress[];
  try {
    answers = await options.resolver(hostname);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "EUNKNOWN";
    throw deliveryErrors.create("WEBHOOK_SEND_DNS_FAILED", { fields: { hostname, code }, cause: error });
  }
  const kept = answers.slice(0, RESOLVED_ADDRESSES_MAX);
  if (kept.length === 0) {
    throw deliveryErrors.create("WEBHOOK_SEND_DNS_FAILED", { fields: { hostname, code: "ENODATA" } });
  }
  for (const answer of kept) {
    const verdict = checkAddress(answer.address, options.policy);
    if (!verdict.allowed) {
      throw deliveryErrors.create("WEBHOOK_SEND_ADDRESS_REFUSED", {
        fields: { hostname, address: answer.address, addressClass: verdict.addressClass },
      });
    }
  }
  return kept;
}

/** A node:net `lookup` that only ever yields policy-checked addresses. */
export function guardedLookup(options: GuardedLookupOptions): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    const wanted = (lookupOptions as LookupOptions).family;
    resolveChecked(hostname, options).then(
      (checked) => {
        const family = wanted === 4 || wanted === 6 ? checked.filter((a) => a.family === wanted) : checked;
        options.onChecked?.(hostname, family);
        if (family.length === 0) {
          const error = deliveryErrors.create("WEBHOOK_SEND_DNS_FAILED", {
            fields: { hostname, code: "ENODATA" },
          });
          callback(error, "", 0);
        } else if ((lookupOptions as LookupOptions).all) callback(null, family);
        else callback(null, family[0]!.address, family[0]!.family);
      },
      (error: Error) => callback(error, "", 0),
    );
  };
}
