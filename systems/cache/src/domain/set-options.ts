/**
 * SET's (and GETEX's) options, parsed exactly as Redis 7 does (parseExtendedStringArgumentsOrReply):
 * NX/XX exclusive, one of EX/PX/EXAT/PXAT or KEEPTTL, GET; an option that conflicts
 * with one seen earlier, an unknown word, or a time option without a value is a
 * syntax error. Repeating a compatible option is allowed (the last value wins).
 * The time value is only validated later (setExpiryAtMs), as in Redis.
 *
 * @example
 * parseSetOptions(["SET", "k", "v", "NX", "EX", "30"]);
 * // { condition: "nx", get: false, keepTtl: false, expiry: { raw: "30", unit: "s", relative: true } }
 * parseSetOptions(["SET", "k", "v", "NX", "XX"]); // undefined: syntax error
 */
import type { TimeUnit } from "./expire-time.ts";

export interface SetExpiryOption {
  readonly raw: string;
  readonly unit: TimeUnit;
  /** EX/PX are relative to now; EXAT/PXAT absolute. */
  readonly relative: boolean;
}

export interface SetOptions {
  readonly condition: "none" | "nx" | "xx";
  readonly get: boolean;
  readonly keepTtl: boolean;
  readonly expiry: SetExpiryOption | undefined;
}

/** The time options SET and GETEX share, by lowercase name. */
const TIME_OPTIONS: Readonly<Record<string, Omit<SetExpiryOption, "raw">>> = {
  ex: { unit: "s", relative: true },
  px: { unit: "ms", relative: true },
  exat: { unit: "s", relative: false },
  pxat: { unit: "ms", relative: false },
};

/** The options after `SET key value`, or undefined for Redis's "syntax error". */
export function parseSetOptions(args: readonly string[]): SetOptions | undefined {
  const options = parseStringOptions(args, 3, "set");
  if (options === undefined) return undefined;
  const { condition, get, keepTtl, expiry } = options;
  return { condition, get, keepTtl, expiry };
}

/** GETEX's options: one time option, or PERSIST. */
export interface GetexOptions {
  readonly persist: boolean;
  readonly expiry: SetExpiryOption | undefined;
}

/** The options after `GETEX key`, or undefined for Redis's "syntax error". */
export function parseGetexOptions(args: readonly string[]): GetexOptions | undefined {
  const options = parseStringOptions(args, 2, "getex");
  return options === undefined ? undefined : { persist: options.persist, expiry: options.expiry };
}

/**
 * One parser for both, as Redis's parseExtendedStringArgumentsOrReply is: SET takes NX/XX,
 * GET and KEEPTTL; GETEX takes PERSIST; both take one time option, exclusive with KEEPTTL /
 * PERSIST, repeatable with the same name (the last value wins).
 */
function parseStringOptions(
  args: readonly string[],
  first: number,
  command: "set" | "getex",
): (SetOptions & GetexOptions) | undefined {
  const isSet = command === "set";
  let condition: SetOptions["condition"] = "none";
  let get = false;
  let keepTtl = false;
  let persist = false;
  let expiry: SetExpiryOption | undefined;
  let timeKind: string | undefined;
  for (let i = first; i < args.length; i++) {
    const option = args[i]!.toLowerCase();
    const time = TIME_OPTIONS[option];
    if (isSet && option === "nx" && condition !== "xx") condition = "nx";
    else if (isSet && option === "xx" && condition !== "nx") condition = "xx";
    else if (isSet && option === "get") get = true;
    else if (isSet && option === "keepttl" && timeKind === undefined) keepTtl = true;
    else if (!isSet && option === "persist" && timeKind === undefined) persist = true;
    else if (
      time !== undefined &&
      !keepTtl &&
      !persist &&
      (timeKind === undefined || timeKind === option) &&
      i + 1 < args.length
    ) {
      timeKind = option;
      expiry = { raw: args[i + 1]!, ...time };
      i += 1;
    } else {
      return undefined;
    }
  }
  return { condition, get, keepTtl, persist, expiry };
}
