/**
 * A resolver that plays a hostile DNS for tests of the address guard
 * (`@casebook/infra/http/address-guard`): it answers what `answers(call)` says for every
 * name — a private address, a public and a private one mixed, a different answer on the
 * next lookup (DNS rebinding) — and counts its calls, so a test can prove the connection
 * went to what was checked after ONE resolution.
 *
 * @example
 * const dns = hostileDns((call) => (call === 1 ? ["127.0.0.1"] : ["10.0.0.1"]));
 * new OutboundClient({ addressGuard: { policy, resolver: dns }, … });
 * dns.calls; // 1 after the first request
 */
import type { Resolver } from "@casebook/infra/http/address-guard";

export function hostileDns(answers: (call: number) => string[]): Resolver & { calls: number } {
  const resolver = async () => {
    resolver.calls += 1;
    return answers(resolver.calls).map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  resolver.calls = 0;
  return resolver;
}
