/**
 * Purges a link from the nginx edge when it changes (issue 18: "disabling a link or changing
 * its target purges it from the edge"): `GET {purgeUrl}/{code}` with the link's domain as
 * Host — the edge's purge location (edge/nginx-edge-config.ts, Debian's
 * libnginx-mod-http-cache-purge) drops the entry, so the next click reaches the origin and
 * gets the new answer. Called after the change is committed and this replica's LRU forgot the
 * link, so the refill cannot read the old row here.
 *
 * Bounded, never failing the edit: one attempt with short timeouts (infra's OutboundClient);
 * 200 purged, 404 it was not cached; anything else is reported (`failed`) and the link's
 * max-age is then the staleness bound, as with no purge at all. Other replicas' LRUs may
 * still hold the old link for URL_SHORTENER_CACHE_TTL_MS and refill the edge from it: with
 * several replicas the bound is that TTL, not zero.
 *
 * @example
 * const purger = new EdgePurger({ url: "http://127.0.0.1:8110/_edge/purge", onPurge: (outcome) => metric.inc({ outcome }) });
 * await purger.purge("localhost:8109", "q3ZxP0a"); // "purged" | "absent" | "failed"
 * purger.close();
 */
import { OutboundClient } from "@casebook/infra/http/outbound";

export type PurgeOutcome = "purged" | "absent" | "failed";

export interface EdgePurgerOptions {
  /** The edge's purge location (URL_SHORTENER_EDGE_PURGE_URL): `http://127.0.0.1:8110/_edge/purge`. */
  url: string;
  onPurge?: (
    outcome: PurgeOutcome,
    detail: { domain: string; code: string; error?: unknown; status?: number },
  ) => void;
}

export class EdgePurger {
  readonly #base: string;
  readonly #client = new OutboundClient({
    addressGuard: "off", // a configured internal URL
    timeouts: { connectMs: 500, headersMs: 1_000, bodyMs: 500 },
    maxResponseBytes: 64 * 1_024,
    responseOverflow: "truncate",
    userAgent: "url-shortener edge purger",
  });
  readonly #onPurge: EdgePurgerOptions["onPurge"];

  constructor(options: EdgePurgerOptions) {
    this.#base = options.url.replace(/\/+$/, "");
    this.#onPurge = options.onPurge;
  }

  async purge(domain: string, code: string): Promise<PurgeOutcome> {
    let outcome: PurgeOutcome;
    let status: number | undefined;
    let error: unknown;
    try {
      const res = await this.#client.request({
        method: "GET",
        url: `${this.#base}/${encodeURIComponent(code)}`,
        headers: { host: domain },
      });
      status = res.status;
      outcome = res.status === 200 ? "purged" : res.status === 404 ? "absent" : "failed";
    } catch (caught) {
      error = caught;
      outcome = "failed";
    }
    this.#onPurge?.(outcome, {
      domain,
      code,
      ...(status === undefined ? {} : { status }),
      ...(error === undefined ? {} : { error }),
    });
    return outcome;
  }

  close(): void {
    this.#client.close();
  }
}
