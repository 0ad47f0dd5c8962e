/**
 * Secret rotation with an overlap window (WH-02, WH-13): rotating does not cut receivers
 * off. The previous secret keeps signing beside the new one until `retiresAtMs`, so a
 * receiver can switch to the new secret at any moment inside the window; after it, only
 * the new one signs. Pure: the store persists the versions, the clock comes from the caller.
 *
 * @example
 * let versions = initialSecrets("whsec_old…");
 * versions = rotateSecret(versions, { secret: "whsec_new…", nowMs: clock.nowMs(), overlapMs: 86_400_000 });
 * signingSecrets(versions, clock.nowMs()); // ["whsec_new…", "whsec_old…"] until the overlap ends
 */
import { deliveryErrors } from "../errors.ts";
import { secretKey } from "./signature.ts";

/** Default overlap: one day, so a receiver deploying once a day still catches it. */
export const DEFAULT_OVERLAP_MS = 86_400_000;
/** Secrets signing at once: each one is an HMAC per attempt and a header entry. */
export const MAX_LIVE_SECRETS = 3;

export interface SecretVersion {
  readonly version: number;
  readonly secret: string;
  /** When this version stops signing; absent while it is the current one. */
  readonly retiresAtMs?: number;
}

/** The versions of a new subscription: one current secret, version 1. */
export function initialSecrets(secret: string): SecretVersion[] {
  secretKey(secret);
  return [{ version: 1, secret }];
}

function live(versions: readonly SecretVersion[], nowMs: number): SecretVersion[] {
  return versions.filter((v) => v.retiresAtMs === undefined || v.retiresAtMs > nowMs);
}

/**
 * A new current secret; every live one retires at nowMs + overlapMs (or earlier, if it
 * was already retiring sooner). Retired versions are dropped.
 */
export function rotateSecret(
  versions: readonly SecretVersion[],
  input: { secret: string; nowMs: number; overlapMs?: number },
): SecretVersion[] {
  secretKey(input.secret);
  const overlapMs = input.overlapMs ?? DEFAULT_OVERLAP_MS;
  if (!Number.isFinite(overlapMs) || overlapMs < 0)
    throw new RangeError(`overlapMs must be >= 0, got ${overlapMs}`);
  const kept = live(versions, input.nowMs);
  if (kept.length >= MAX_LIVE_SECRETS) {
    const retiresAtMs = Math.min(...kept.map((v) => v.retiresAtMs ?? Number.POSITIVE_INFINITY));
    throw deliveryErrors.create("WEBHOOK_SECRET_ROTATION_LIMIT", { fields: { retiresAtMs } });
  }
  const retireAtMs = input.nowMs + overlapMs;
  const retiring = kept.map((v) => ({
    ...v,
    retiresAtMs: Math.min(v.retiresAtMs ?? retireAtMs, retireAtMs),
  }));
  const version = Math.max(0, ...versions.map((v) => v.version)) + 1;
  return [{ version, secret: input.secret }, ...retiring.filter((v) => v.retiresAtMs > input.nowMs)];
}

/** Secrets that sign an attempt at `nowMs`, newest first. */
export function signingSecrets(versions: readonly SecretVersion[], nowMs: number): string[] {
  const signing = live(versions, nowMs).sort((a, b) => b.version - a.version);
  if (signing.length === 0)
    throw new RangeError("no live secret: a subscription always keeps its current one");
  return signing.map((v) => v.secret);
}
