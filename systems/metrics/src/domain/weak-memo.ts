/**
 * A value remembered per object in a WeakMap, made on first use: the PromQL engine's per-step
 * label work (series keys, groups, matching signatures, result labels) is done once per label
 * set, since a range query meets the same label arrays at every step, and forgotten with them.
 *
 * @example
 * const keys = new WeakMap<Labels, string>();
 * remembered(keys, labels, () => seriesKey(labels)); // computed once per label array
 */
export function remembered<K extends object, V>(map: WeakMap<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}
