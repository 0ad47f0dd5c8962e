/**
 * The three fan-out tiers (FD-08) and their thresholds, derived — not assumed (correction
 * 7) — from two measured or configured numbers: the fan-out capacity in list writes per
 * second and the propagation-delay target. A post by an author with X followers takes
 * X / capacity seconds to reach them all (FD-05); when that exceeds the target, pushing to
 * everyone misses it.
 *
 * - **push** (X ≤ fullPushMax): every follower's list gets the id.
 * - **push-active** (fullPushMax < X ≤ activePushMax): only followers who opened their feed
 *   in the last N days get it — the others' lists have expired anyway (same N) and are
 *   rebuilt by pull on their next open. `activePushMax` = fullPushMax / activeShare: the
 *   follower count at which the ACTIVE followers alone reach the bound.
 * - **pull** (X > activePushMax): nothing is pushed; each reader pulls the author's recent
 *   posts at read time (FD-06/13).
 *
 * The tier is a function of the follower count ONLY, on purpose: the writer (fan-out worker)
 * and the reader (home feed) must agree on who is pulled, or an author's post would be
 * neither pushed nor pulled. An author moves tier as their followers grow: the tier is
 * decided per post, from the current count; posts pushed earlier stay in the lists and the
 * merge dedupes them against the pulled ones.
 *
 * @example
 * const t = deriveThresholds({ fanoutWritesPerS: 40_000, delayTargetMs: 1_000, activeShare: 0.3 });
 * t.fullPushMax; // 40 000
 * t.activePushMax; // 133 333
 * tierOf(50_000, t); // "push-active"
 */

export type Tier = "push" | "push-active" | "pull";

export interface ThresholdInputs {
  /** Measured fan-out capacity: list writes per second across the fan-out workers. */
  readonly fanoutWritesPerS: number;
  /** Propagation-delay target: a pushed post must reach its lists within this. */
  readonly delayTargetMs: number;
  /** Share of users active in the last N days, in (0, 1]. */
  readonly activeShare: number;
}

export interface Thresholds {
  /** Most followers a post may be pushed to within the delay target. */
  readonly fullPushMax: number;
  /** Follower count above which even the active followers exceed fullPushMax (with activeShare). */
  readonly activePushMax: number;
}

export function deriveThresholds(inputs: ThresholdInputs): Thresholds {
  const { fanoutWritesPerS, delayTargetMs, activeShare } = inputs;
  if (!(fanoutWritesPerS > 0 && delayTargetMs > 0))
    throw new RangeError("capacity and delay target must be > 0");
  if (!(activeShare > 0 && activeShare <= 1)) throw new RangeError("activeShare must be in (0, 1]");
  const fullPushMax = Math.floor((fanoutWritesPerS * delayTargetMs) / 1_000);
  return { fullPushMax, activePushMax: Math.floor(fullPushMax / activeShare) };
}

/** The author's tier for this post, from their current follower count. */
export function tierOf(followers: number, t: Thresholds): Tier {
  if (followers <= t.fullPushMax) return "push";
  return followers <= t.activePushMax ? "push-active" : "pull";
}
