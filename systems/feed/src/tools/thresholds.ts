/**
 * `casebook feed thresholds [--writes-per-s N] [--delay-ms N] [--active-share X]`: prints the
 * three tiers' follower thresholds (FD-08) derived from a fan-out capacity and a delay target,
 * with the design text's own numbers beside them (FD-02/05/12). Defaults: the service's
 * settings (FEED_FANOUT_WRITES_PER_S, FEED_DELAY_TARGET_MS, FEED_ACTIVE_SHARE).
 *
 * @example
 * // npx casebook feed thresholds --writes-per-s 343000 --delay-ms 1000
 */
import { parseArgs } from "node:util";
import { loadSystemConfig } from "../config.ts";
import {
  averagePerS,
  dailyListWrites,
  dailyReads,
  fanoutSeconds,
  listMemoryBytes,
} from "../domain/estimates.ts";
import { deriveThresholds, type ThresholdInputs } from "../domain/tiers.ts";

const n = (x: number) => Math.round(x).toLocaleString("en-US");

/** The report's lines for `inputs` (pure, so a test reads what the command prints). */
export function thresholdsReport(inputs: ThresholdInputs): string[] {
  const t = deriveThresholds(inputs);
  const writes = averagePerS(dailyListWrites(20e6, 200));
  return [
    `fan-out capacity ${n(inputs.fanoutWritesPerS)} list writes/s, delay target ${n(inputs.delayTargetMs)} ms, active share ${inputs.activeShare}`,
    "",
    "| tier | followers | what the fan-out does |",
    "|---|---|---|",
    `| push | ≤ ${n(t.fullPushMax)} | the id into every follower's list |`,
    `| push-active | ${n(t.fullPushMax + 1)} … ${n(t.activePushMax)} | only followers active in the last N days |`,
    `| pull | > ${n(t.activePushMax)} | nothing; readers pull the author's posts (cached) |`,
    "",
    `the text's numbers: ${n(averagePerS(dailyReads(100e6, 10)))} reads/s average (FD-02), ${n(writes)} list writes/s (FD-02),`,
    `a 30M-follower post = ${n(fanoutSeconds(30e6, writes))} s of the whole capacity (FD-05); at this capacity ${n(fanoutSeconds(30e6, inputs.fanoutWritesPerS))} s`,
    `lists: 800 × 20 B × 100M users = ${(listMemoryBytes(100e6, 800, 20) / 1e12).toFixed(1)} TB as assumed (FD-12); measured ~120 B/entry above 128 entries`,
  ];
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      "writes-per-s": { type: "string" },
      "delay-ms": { type: "string" },
      "active-share": { type: "string" },
    },
  });
  const config = loadSystemConfig(process.env);
  const inputs = {
    fanoutWritesPerS: Number(values["writes-per-s"] ?? config.fanoutWritesPerS),
    delayTargetMs: Number(values["delay-ms"] ?? config.delayTargetMs),
    activeShare: Number(values["active-share"] ?? config.activeShare),
  };
  for (const [flag, value] of Object.entries(inputs)) {
    if (!Number.isFinite(value) || value <= 0) {
      process.stderr.write(`thresholds: ${flag} must be a positive number\n`);
      process.exit(2);
    }
  }
  process.stdout.write(`${thresholdsReport(inputs).join("\n")}\n`);
}
