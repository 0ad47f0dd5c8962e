/**
 * The hit-ratio study as a report: bench rows (one per trace × size × policy, in %,
 * beside LRU as the peer, so `ratio` reads "times LRU's hit ratio"), a pivot table a
 * person can read at a glance, and the issue's goals checked against the run.
 *
 * @example
 * const rows = hitRatioRows(cells);       // for renderBench / --json
 * console.log(hitRatioPivot(cells));      // trace × size rows, one column per policy
 * console.log(hitRatioGoals(cells).join("\n"));
 */
import { type BenchResult, benchRow } from "@casebook/lab/bench-report";
import {
  type HitRatioCell,
  type PolicyName,
  policyLabels,
  policyNames,
} from "../src/domain/hit-ratio-sim.ts";

function scenarioOf(cell: HitRatioCell): string {
  return `${cell.trace}, cache ${formatPct(cell.sizeFraction)} (${cell.capacity.toLocaleString("en-US")} entries)`;
}

function formatPct(fraction: number): string {
  return `${Number((fraction * 100).toFixed(2))}%`;
}

function find(
  cells: readonly HitRatioCell[],
  like: HitRatioCell,
  policy: PolicyName,
): HitRatioCell | undefined {
  return cells.find(
    (c) => c.trace === like.trace && c.sizeFraction === like.sizeFraction && c.policy === policy,
  );
}

/** One bench row per cell: hit ratio in %, higher is better, LRU beside it as the peer. */
export function hitRatioRows(cells: readonly HitRatioCell[]): BenchResult[] {
  return cells.map((cell) => {
    const lru = cell.policy === "lru" ? undefined : find(cells, cell, "lru");
    return benchRow({
      system: "cache",
      scenario: scenarioOf(cell),
      metric: `hit ratio ${policyLabels[cell.policy]}`,
      unit: "%",
      value: Number((cell.hitRatio * 100).toFixed(2)),
      direction: "higher-is-better",
      ...(lru ? { peer: { name: "LRU", value: Number((lru.hitRatio * 100).toFixed(2)) } } : {}),
    });
  });
}

/** A markdown pivot: one row per trace and size, one column per policy, hit ratio in %. */
export function hitRatioPivot(cells: readonly HitRatioCell[]): string {
  const policies = policyNames.filter((p) => cells.some((c) => c.policy === p));
  const header = ["trace", "cache size", ...policies.map((p) => policyLabels[p])];
  const seen = new Set<string>();
  const body: string[][] = [];
  for (const cell of cells) {
    const key = `${cell.trace}|${cell.sizeFraction}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const values = policies.map((p) => {
      const found = find(cells, cell, p);
      return found ? (found.hitRatio * 100).toFixed(2) : "";
    });
    body.push([
      cell.trace,
      `${formatPct(cell.sizeFraction)} (${cell.capacity.toLocaleString("en-US")})`,
      ...values,
    ]);
  }
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cellsOfRow: string[]) =>
    `| ${cellsOfRow.map((text, i) => (i < 2 ? text.padEnd(widths[i]!) : text.padStart(widths[i]!))).join(" | ")} |`;
  const rule = `| ${widths.map((w, i) => (i < 2 ? "-".repeat(w) : `${"-".repeat(w - 1)}:`)).join(" | ")} |`;
  return [line(header), rule, ...body.map(line)].join("\n");
}

/** The issue's goals: W-TinyLFU >= LRU on every trace and size, and how close it comes to Bélády. */
export function hitRatioGoals(cells: readonly HitRatioCell[]): string[] {
  const tiny = cells.filter((c) => c.policy === "w-tiny-lfu");
  const behindLru = tiny.filter((c) => c.hitRatio < (find(cells, c, "lru")?.hitRatio ?? 0));
  const lines = [
    `- goal W-TinyLFU ≥ LRU on every trace and size: ${behindLru.length === 0 ? "met" : `NOT met (${behindLru.map(scenarioOf).join("; ")})`}`,
  ];
  const gaps = tiny
    .map((c) => ({ cell: c, gap: ((find(cells, c, "belady")?.hitRatio ?? c.hitRatio) - c.hitRatio) * 100 }))
    .sort((a, b) => b.gap - a.gap);
  if (gaps.length > 0) {
    const worst = gaps[0]!;
    const mean = gaps.reduce((sum, g) => sum + g.gap, 0) / gaps.length;
    lines.push(
      `- W-TinyLFU below Bélády: ${mean.toFixed(1)} points on average, at most ${worst.gap.toFixed(1)} (${scenarioOf(worst.cell)})`,
    );
  }
  return lines;
}
