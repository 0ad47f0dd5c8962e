/**
 * The abuse step before a link is stored (US-16): a shortener is a phishing vector, so every
 * target passes a verifier first. The interface is the one a Safe-Browsing-like service
 * would implement (`verify(url)` → allowed, or refused with a reason); the default is a local
 * list — domains (a listed domain blocks its subdomains too) and substring patterns — plus
 * the shortener's own domains, so a short link never points at another short link (a loop
 * or a way to hide a blocked target behind a second hop).
 *
 * @example
 * const verifier = localListVerifier({ domains: ["evil.test"], patterns: ["/phish"], ownDomains: ["s.example"] });
 * await verifier.verify(new URL("https://login.evil.test/")); // { allowed: false, reason: "domain evil.test is blocked" }
 */

export type Verdict = { allowed: true } | { allowed: false; reason: string };

export interface TargetVerifier {
  verify(url: URL): Promise<Verdict>;
}

export interface LocalListOptions {
  /** Blocked domains: `evil.test` blocks `evil.test` and `*.evil.test`. */
  domains: readonly string[];
  /** Blocked substrings of the whole URL, lower-cased: `/wp-login`, `paypal-verify`. */
  patterns: readonly string[];
  /** This service's own short domains: a target there would be a redirect chain. */
  ownDomains: readonly string[];
}

function domainMatches(host: string, domain: string): boolean {
  return host === domain || host.endsWith(`.${domain}`);
}

export function localListVerifier(options: LocalListOptions): TargetVerifier {
  const domains = options.domains.map((d) => d.toLowerCase());
  const patterns = options.patterns.map((p) => p.toLowerCase());
  const own = options.ownDomains.map((d) => d.toLowerCase());
  return {
    async verify(url) {
      const host = url.hostname.toLowerCase();
      for (const domain of own) {
        if (domainMatches(host, domain))
          return { allowed: false, reason: `${domain} is this shortener's own domain` };
      }
      for (const domain of domains) {
        if (domainMatches(host, domain)) return { allowed: false, reason: `domain ${domain} is blocked` };
      }
      const whole = url.href.toLowerCase();
      for (const pattern of patterns) {
        if (whole.includes(pattern)) return { allowed: false, reason: `pattern ${pattern} is blocked` };
      }
      return { allowed: true };
    },
  };
}
