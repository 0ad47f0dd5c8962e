/**
 * Issue 22 in `casebook up`: the system that declares `scrapes` in its manifest (metrics) is
 * told every service of this launch — the console and itself included — as its scrape
 * targets (`job=url/metrics`, the job being the service's name), and gets an API key for its
 * scrape tenant (minted once and kept, `wiring-keys.ts`); the console gets the same key and that system's URL, so its plots read
 * the query API instead of its own short window. The caller's environment wins, as for every
 * variable: a targets list or a key already set is kept. The CLI knows no system by name and
 * imports none: the manifest says which variables to set and the key's kind.
 *
 * @example
 * const plans = [consoleChild, ...selection.plans];
 * wireScrapes(plans, { env: process.env, keys: keptWiringKeys(file, randomBytes) });
 * plans.find((p) => p.name === "metrics")!.env.METRICS_SCRAPE_TARGETS; // "console=http://127.0.0.1:8100/metrics,…"
 */
import { consoleName } from "./console-plan.ts";
import type { SystemPlan } from "./launch-plan.ts";
import type { WiringKeys } from "./wiring-keys.ts";

/** What the console reads (packages/console/src/console-config.ts). */
export const consoleMetricsUrlEnv = "CASEBOOK_CONSOLE_METRICS_URL";
export const consoleMetricsKeyEnv = "CASEBOOK_CONSOLE_METRICS_API_KEY";

export interface WireScrapesOptions {
  env: NodeJS.ProcessEnv;
  keys: WiringKeys;
}

/** Sets the scraper's targets and key, and the console's source, in the plans' environments (in place). */
export function wireScrapes(plans: readonly SystemPlan[], options: WireScrapesOptions): void {
  const scraper = plans.find((plan) => plan.scrapes !== undefined && plan.name !== consoleName);
  if (scraper?.scrapes === undefined) return;
  const { targetsEnv, apiKeyEnv, apiKeyKind } = scraper.scrapes;
  const targets = plans.map((plan) => `${plan.name}=${plan.url}/metrics`).join(",");
  const key = given(options.env[apiKeyEnv]) ?? options.keys.keyFor(`scrapes ${scraper.name}`, apiKeyKind);
  scraper.env[targetsEnv] = given(options.env[targetsEnv]) ?? targets;
  scraper.env[apiKeyEnv] = key;
  const webConsole = plans.find((plan) => plan.name === consoleName);
  if (webConsole === undefined) return;
  webConsole.env[consoleMetricsUrlEnv] = given(options.env[consoleMetricsUrlEnv]) ?? scraper.url;
  webConsole.env[consoleMetricsKeyEnv] = given(options.env[consoleMetricsKeyEnv]) ?? key;
}

function given(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}
