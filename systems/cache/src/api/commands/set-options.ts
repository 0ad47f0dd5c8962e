/**
 * SET's options, parsed exactly as Redis 7 does (parseExtendedStringArgumentsOrReply):
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
export const TIME_OPTIONS: Readonly<Record<string, Omit<SetExpiryOption, "raw">>> = {
  ex: { unit: "s", relative: true },
  px: { unit: "ms", relative: true },
  exat: { unit: "s", relative: false },
  pxat: { unit: "ms", relative: false },
};

/** The options after `SET key value`, or undefined for Redis's "syntax error". */
export function parseSetOptions(args: readonly string[]): SetOptions | undefined {
  let condition: SetOptions["condition"] = "none";
  let get = false;
  let keepTtl = false;
  let expiry: SetExpiryOption | undefined;
  let timeKind: string | undefined;
  for (let i = 3; i < args.length; i++) {
    const option = args[i]!.toLowerCase();
    const time = TIME_OPTIONS[option];
    if (option === "nx" && condition !== "xx") condition = "nx";
    else if (option === "xx" && condition !== "nx") condition = "xx";
    else if (option === "get") get = true;
    else if (option === "keepttl" && timeKind === undefined) keepTtl = true;
    else if (
      time !== undefined &&
      !keepTtl &&
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
  return { condition, get, keepTtl, expiry };
}
