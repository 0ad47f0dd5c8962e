/**
 * FS-16's table and plot from the model (src/domain/arrival-scenario.ts): the same arrival
 * curve with and without the waiting room. Prints the markdown table; with `--svg <file>`
 * also writes the plot (requests offered to checkout per second, both sides, and the
 * arrivals), committed as `bench/fs16-arrivals.svg`.
 *
 * @example
 * // node systems/flash-sale/bench/arrival-scenario.ts --svg systems/flash-sale/bench/fs16-arrivals.svg
 */
import { writeFileSync } from "node:fs";
import { seededRandom } from "@casebook/kit/random";
import { arrivalScenario, type ScenarioResult } from "../src/domain/arrival-scenario.ts";

export const FS16_CONFIG = { capacityPerS: 300, peakFactor: 20, decayS: 3, durationS: 120 } as const;

export function fs16Table(r: ScenarioResult): string {
  const rows: [string, string | number, string | number][] = [
    ["peak requests/s offered to checkout", r.without.peakOfferedPerS, r.withRoom.peakOfferedPerS],
    ["seconds checkout is offered more than its capacity", r.without.overloadedS, r.withRoom.overloadedS],
    ["overload ends at (s)", r.without.overloadEndsS, r.withRoom.overloadEndsS],
    ["clients served in the run", r.without.served, r.withRoom.served],
    ["clients who gave up after their last retry", r.without.gaveUp, r.withRoom.gaveUp],
    ["largest line in the waiting room", "—", r.withRoom.maxQueue],
  ];
  const head = `arrivals: ${r.arrivals.total.toLocaleString("en")} in all, ${r.arrivals.peakPerS.toLocaleString("en")}/s at the peak, above capacity for ${r.arrivals.aboveCapacityS} s\n\n`;
  const fmt = (v: string | number) => (typeof v === "number" ? v.toLocaleString("en") : v);
  return `${head}| FS-16, capacity ${FS16_CONFIG.capacityPerS}/s | without the room | with the room |\n|---|---:|---:|\n${rows
    .map(([k, a, b]) => `| ${k} | ${fmt(a)} | ${fmt(b)} |`)
    .join("\n")}\n`;
}

export function fs16Svg(r: ScenarioResult): string {
  const w = 720;
  const h = 300;
  const pad = 40;
  const n = r.arrivals.perS.length;
  const max = Math.max(r.without.peakOfferedPerS, r.arrivals.peakPerS);
  const x = (t: number) => pad + (t / (n - 1)) * (w - 2 * pad);
  const y = (v: number) => h - pad - (v / max) * (h - 2 * pad);
  const line = (series: number[], color: string, dash = "") =>
    `<polyline fill="none" stroke="${color}" stroke-width="2" ${dash} points="${series
      .map((v, t) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`)
      .join(" ")}"/>`;
  const cap = y(FS16_CONFIG.capacityPerS);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="12">
<title>FS-16: requests per second offered to checkout, with and without the waiting room</title>
<rect width="100%" height="100%" fill="white"/>
<line x1="${pad}" y1="${h - pad}" x2="${w - pad}" y2="${h - pad}" stroke="#999"/>
<line x1="${pad}" y1="${pad}" x2="${pad}" y2="${h - pad}" stroke="#999"/>
<line x1="${pad}" y1="${cap}" x2="${w - pad}" y2="${cap}" stroke="#2a2" stroke-dasharray="4 3"/>
<text x="${w - pad}" y="${cap - 4}" text-anchor="end" fill="#2a2">checkout capacity ${FS16_CONFIG.capacityPerS}/s</text>
${line(r.arrivals.perS, "#888", 'stroke-dasharray="2 2"')}
${line(r.without.offeredPerS, "#c33")}
${line(r.withRoom.offeredPerS, "#36c")}
<text x="${pad}" y="${pad - 10}">requests/s offered to checkout (FS-16 model, same arrivals)</text>
<text x="${w - pad}" y="${pad + 14}" text-anchor="end" fill="#c33">without the room: arrivals + retries</text>
<text x="${w - pad}" y="${pad + 30}" text-anchor="end" fill="#36c">with the room: the line's head, at capacity</text>
<text x="${w - pad}" y="${pad + 46}" text-anchor="end" fill="#888">arrivals (20× capacity, decaying)</text>
<text x="${w / 2}" y="${h - 10}" text-anchor="middle">seconds (0–${n - 1})</text>
<text x="${pad - 4}" y="${pad + 4}" text-anchor="end">${max.toLocaleString("en")}</text>
<text x="${pad - 4}" y="${h - pad}" text-anchor="end">0</text>
</svg>
`;
}

if (import.meta.main) {
  const r = arrivalScenario(FS16_CONFIG, seededRandom(16));
  process.stdout.write(fs16Table(r));
  const at = process.argv.indexOf("--svg");
  if (at > 0 && process.argv[at + 1]) writeFileSync(process.argv[at + 1]!, fs16Svg(r));
}
