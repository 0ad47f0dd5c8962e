/**
 * The models a gateway serves, by the name clients call (LG-19), each mapped to an ordered
 * chain of destinations (LG-09): tiers tried in order — the same model elsewhere, then a
 * smaller model, then the own endpoint — and inside a tier equal deployments of one model,
 * balanced. Switching what stands behind a name is a configuration change; no client
 * changes, and the breakers pick the deployment at run time.
 *
 * Syntax, comma-separated: `name`, `name=upstream`, or `name=chain` where a chain is tiers
 * joined by `>` and a tier is deployments joined by `|`, each `upstream@destination`
 * (`@destination` omitted = the default destination, LLM_GATEWAY_UPSTREAM_URL). A name twice,
 * or a deployment twice in one chain, is refused (which one would win is a guess).
 *
 * @example
 * const catalog = parseModelList("fast=gpt-4o-mini,smart=gpt-4o@east|gpt-4o@west>gpt-4o-mini@east");
 * catalog.get("fast"); // { name: "fast", upstreamModel: "gpt-4o-mini", tiers: [[{ id: "gpt-4o-mini@default", … }]] }
 * catalog.get("smart")?.tiers.length; // 2
 */

/** The destination of a deployment written without `@destination`. */
export const DEFAULT_DESTINATION = "default";

/** One model on one destination: what a breaker and a destination quota are kept for. */
export interface Deployment {
  /** `upstreamModel@destination`: the breaker's, metrics' and quota's name. */
  readonly id: string;
  readonly destination: string;
  /** What the gateway sends upstream as `model`. */
  readonly upstreamModel: string;
}

export interface ServedModel {
  /** What clients send as `model`. */
  readonly name: string;
  /** The primary deployment's upstream model (the first of the first tier). */
  readonly upstreamModel: string;
  /** Tiers in fallback order; the deployments of a tier are load-balanced. */
  readonly tiers: readonly (readonly Deployment[])[];
}

const NAME = "[A-Za-z0-9._:-]{1,100}";
const UPSTREAM = "[A-Za-z0-9._:/-]{1,100}";
const DESTINATION = "[A-Za-z0-9_-]{1,40}";
const DEPLOYMENT = `${UPSTREAM}(@${DESTINATION})?`;
const TIER = `${DEPLOYMENT}(\\|${DEPLOYMENT}){0,15}`;
const CHAIN = `${TIER}(>${TIER}){0,7}`;
const ENTRY = `${NAME}(=${CHAIN})?`;
/** At most 100 models, each `name` or `name=chain`. */
export const MODEL_LIST_PATTERN = new RegExp(`^${ENTRY}(,${ENTRY}){0,99}$`);
/** Destinations: `name=url`, comma-separated. */
export const DESTINATION_NAME_PATTERN = new RegExp(`^${DESTINATION}$`);

export type ModelCatalog = ReadonlyMap<string, ServedModel>;

function deploymentOf(text: string): Deployment {
  const at = text.lastIndexOf("@");
  const upstreamModel = at < 0 ? text : text.slice(0, at);
  const destination = at < 0 ? DEFAULT_DESTINATION : text.slice(at + 1);
  return { id: `${upstreamModel}@${destination}`, destination, upstreamModel };
}

export function parseModelList(list: string): ModelCatalog {
  if (!MODEL_LIST_PATTERN.test(list)) throw new RangeError(`"${list}" is not a list of name[=chain]`);
  const catalog = new Map<string, ServedModel>();
  for (const entry of list.split(",")) {
    const [name, chain] = entry.split("=") as [string, string | undefined];
    if (catalog.has(name)) throw new RangeError(`model ${name} is listed twice`);
    const tiers = (chain ?? name).split(">").map((tier) => tier.split("|").map(deploymentOf));
    const ids = tiers.flat().map((d) => d.id);
    const twice = ids.find((id, i) => ids.indexOf(id) !== i);
    if (twice !== undefined) throw new RangeError(`model ${name} lists ${twice} twice`);
    const primary = tiers[0]?.[0] as Deployment;
    catalog.set(name, { name, upstreamModel: primary.upstreamModel, tiers });
  }
  return catalog;
}

/** Every destination a catalog names. */
export function destinationsOf(catalog: ModelCatalog): Set<string> {
  return new Set([...catalog.values()].flatMap((m) => m.tiers.flat().map((d) => d.destination)));
}

/** A destination's API, from its URL: `anthropic+https://…/v1` speaks Anthropic's Messages, a plain URL OpenAI's. */
export function wireOf(destinationUrl: string): { wire: "openai" | "anthropic"; url: string } {
  return destinationUrl.startsWith(ANTHROPIC_PREFIX)
    ? { wire: "anthropic", url: destinationUrl.slice(ANTHROPIC_PREFIX.length) }
    : { wire: "openai", url: destinationUrl };
}

const ANTHROPIC_PREFIX = "anthropic+";

/**
 * `name=url` pairs (LLM_GATEWAY_DESTINATIONS), `anthropic+` before a URL for an Anthropic
 * Messages provider; a name twice or a bad URL is refused.
 */
export function parseDestinationList(list: string): Map<string, string> {
  const destinations = new Map<string, string>();
  if (list.trim() === "") return destinations;
  for (const entry of list.split(",")) {
    const eq = entry.indexOf("=");
    const name = entry.slice(0, eq);
    const url = entry.slice(eq + 1);
    if (eq < 1 || !DESTINATION_NAME_PATTERN.test(name)) throw new RangeError(`"${entry}" is not name=url`);
    if (destinations.has(name)) throw new RangeError(`destination ${name} is listed twice`);
    let parsed: URL;
    try {
      parsed = new URL(wireOf(url).url);
    } catch {
      throw new RangeError(`destination ${name}: "${url}" is not a URL`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
      throw new RangeError(`destination ${name}: only http and https URLs`);
    destinations.set(name, url);
  }
  return destinations;
}
