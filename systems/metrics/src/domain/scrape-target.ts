/**
 * The scraper's targets, from `METRICS_SCRAPE_TARGETS`: a comma-separated list of
 * `job=url` (`cache=http://127.0.0.1:8114/metrics`), as a static `scrape_configs` entry of
 * Prometheus would name them. Each target's series get `job` (the name before `=`) and
 * `instance` (the URL's host:port), the two labels Prometheus attaches to everything it scrapes.
 * A URL without a path scrapes `/metrics`. Only http(s), no credentials in the URL, each
 * job=instance pair once, and a bounded count: a typo fails the start with the entry named.
 *
 * @example
 * parseScrapeTargets("cache=http://127.0.0.1:8114,webhooks=http://127.0.0.1:8102/metrics");
 * // [{ job: "cache", instance: "127.0.0.1:8114", url: "http://127.0.0.1:8114/metrics" }, …]
 */

export interface ScrapeTarget {
  readonly job: string;
  /** host:port, as Prometheus labels it. */
  readonly instance: string;
  readonly url: string;
}

/** Targets one process scrapes at most: Casebook runs fifteen services. */
export const MAX_SCRAPE_TARGETS = 256;
const JOB_PATTERN = /^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$/;

export class ScrapeTargetError extends Error {
  readonly entry: string;

  constructor(entry: string, reason: string) {
    super(`METRICS_SCRAPE_TARGETS entry "${entry}": ${reason}`);
    this.entry = entry;
  }
}

export function parseScrapeTargets(text: string | undefined): ScrapeTarget[] {
  if (text === undefined || text.trim() === "") return [];
  const entries = text.split(",").map((entry) => entry.trim());
  if (entries.length > MAX_SCRAPE_TARGETS) {
    throw new ScrapeTargetError(entries[MAX_SCRAPE_TARGETS]!, `more than ${MAX_SCRAPE_TARGETS} targets`);
  }
  const targets: ScrapeTarget[] = [];
  for (const entry of entries) {
    const target = parseEntry(entry);
    if (targets.some((t) => t.job === target.job && t.instance === target.instance))
      throw new ScrapeTargetError(entry, `job ${target.job} already scrapes ${target.instance}`);
    targets.push(target);
  }
  return targets;
}

function parseEntry(entry: string): ScrapeTarget {
  const at = entry.indexOf("=");
  if (at < 0) throw new ScrapeTargetError(entry, "write it as job=url");
  const job = entry.slice(0, at).trim();
  if (!JOB_PATTERN.test(job))
    throw new ScrapeTargetError(entry, `"${job}" is not a job name (letters, digits, _ . -)`);
  let url: URL;
  try {
    url = new URL(entry.slice(at + 1).trim());
  } catch {
    throw new ScrapeTargetError(entry, "the URL does not parse");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new ScrapeTargetError(entry, "only http(s) URLs");
  if (url.username !== "" || url.password !== "")
    throw new ScrapeTargetError(entry, "no credentials in the URL");
  if (url.pathname === "/" && !entry.endsWith("/")) url.pathname = "/metrics";
  const port = url.port !== "" ? url.port : url.protocol === "https:" ? "443" : "80";
  return { job, instance: `${url.hostname}:${port}`, url: url.href };
}
