/**
 * Reads the alerting rule files named in METRICS_ALERT_RULE_FILES (comma-separated paths) and
 * parses them (`domain/alert-rules.ts`); a missing file or a bad rule stops the start with the
 * file and the field at fault, as `promtool check rules` would report it.
 *
 * @example
 * const groups = await loadRuleFiles("/etc/metrics/rules.yml", 15_000);
 */
import { readFile } from "node:fs/promises";
import { parseRuleFile, RuleFileError, type RuleGroup } from "../domain/alert-rules.ts";

export async function loadRuleFiles(
  paths: string | undefined,
  defaultIntervalMs: number,
): Promise<RuleGroup[]> {
  const groups: RuleGroup[] = [];
  for (const path of (paths ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "")) {
    const text = await readFile(path, "utf8");
    try {
      groups.push(...parseRuleFile(text, { defaultIntervalMs }));
    } catch (error) {
      if (error instanceof RuleFileError)
        throw new Error(`rule file ${path}: ${error.message}`, { cause: error });
      throw error;
    }
  }
  return groups;
}
