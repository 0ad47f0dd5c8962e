/**
 * The models a gateway serves, by the name clients call (LG-19): each name maps to the
 * model the gateway asks upstream for, so switching what stands behind a name is a
 * configuration change and no client changes. Parsed from `name` or `name=upstream-model`,
 * comma-separated; a name twice is refused (which one would win is a guess).
 *
 * @example
 * const catalog = parseModelList("fast=gpt-4o-mini,gpt-4o");
 * catalog.get("fast"); // { name: "fast", upstreamModel: "gpt-4o-mini" }
 */

export interface ServedModel {
  /** What clients send as `model`. */
  readonly name: string;
  /** What the gateway sends upstream. */
  readonly upstreamModel: string;
}

const NAME = "[A-Za-z0-9._:-]{1,100}";
const UPSTREAM = "[A-Za-z0-9._:/-]{1,100}";
/** At most 100 models, each `name` or `name=upstream`. */
export const MODEL_LIST_PATTERN = new RegExp(`^${NAME}(=${UPSTREAM})?(,${NAME}(=${UPSTREAM})?){0,99}$`);

export type ModelCatalog = ReadonlyMap<string, ServedModel>;

export function parseModelList(list: string): ModelCatalog {
  if (!MODEL_LIST_PATTERN.test(list)) throw new RangeError(`"${list}" is not a list of name[=upstream]`);
  const catalog = new Map<string, ServedModel>();
  for (const entry of list.split(",")) {
    const [name, upstream] = entry.split("=") as [string, string | undefined];
    if (catalog.has(name)) throw new RangeError(`model ${name} is listed twice`);
    catalog.set(name, { name, upstreamModel: upstream ?? name });
  }
  return catalog;
}
