/**
 * The design text's own section for a system: its seed reference from the architecture map
 * ("000 §1", "003") turned into the text a reader clicks through to. Seeds live in
 * `shared/seeds/<seed>_*.txt`; `000` holds twelve designs, each opening with a heading
 * `N <name>` and a first part `N.1 …`, so §N runs from that heading to the next one; `003`
 * and `004` are one design each, the whole file. Bounded: a page, not a dump.
 *
 * @example
 * designSection(sharedDir(root), "000 §1")?.text.split("\n")[0]; // "1 rate limiter distribuído"
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export const maxDesignChars = 120_000;

export interface DesignSection {
  /** The seed file's name. */
  file: string;
  text: string;
}

const seedPattern = /^(\d{3})(?:\s*§(\d{1,2}))?$/;

export function designSection(sharedDir: string, seed: string | undefined): DesignSection | undefined {
  const match = seed === undefined ? null : seedPattern.exec(seed.trim());
  if (match === null) return undefined;
  const [, prefix, section] = match as unknown as [string, string, string | undefined];
  const seedsDir = join(sharedDir, "seeds");
  if (!existsSync(seedsDir)) return undefined;
  const file = readdirSync(seedsDir).find((name) => name.startsWith(`${prefix}_`) && name.endsWith(".txt"));
  if (file === undefined) return undefined;
  const whole = readFileSync(join(seedsDir, file), "utf8");
  const text = section === undefined ? whole : sliceSection(whole, Number(section));
  return text === undefined ? undefined : { file, text: text.slice(0, maxDesignChars) };
}

/** Lines from `N <name>` (or `N.1 …`) up to the next design's heading. */
function sliceSection(text: string, n: number): string | undefined {
  const lines = text.split("\n");
  const first = lines.findIndex((line) => line.startsWith(`${n}.1 `));
  if (first < 0) return undefined;
  const start = headingAbove(lines, first, n);
  const nextFirst = lines.findIndex((line, i) => i > first && line.startsWith(`${n + 1}.1 `));
  const end = nextFirst < 0 ? lines.length : headingAbove(lines, nextFirst, n + 1);
  return lines.slice(start, end).join("\n").trim();
}

/** The `N <name>` heading just above line `index` (blank lines between), else `index` itself. */
function headingAbove(lines: readonly string[], index: number, n: number): number {
  for (let i = index - 1; i >= 0 && i >= index - 3; i--) {
    if (lines[i]!.startsWith(`${n} `)) return i;
    if (lines[i]!.trim() !== "") break;
  }
  return index;
}
