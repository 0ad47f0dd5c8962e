/**
 * A 32-bit hash of a cache key: fmix32 for 32-bit integers (the simulator's keys), murmur3
 * of the UTF-8 text otherwise (both in kit).
 *
 * @example
 * hashKey(7) === fmix32(7); // true
 * hashKey("7") === murmur3("7"); // true
 */
import { fmix32 } from "@casebook/kit/fmix32";
import { murmur3 } from "@casebook/kit/murmur3";

export function hashKey(key: string | number): number {
  if (typeof key === "number" && (key | 0) === key) return fmix32(key);
  return murmur3(String(key));
}
