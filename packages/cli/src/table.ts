/**
 * A plain-text table with aligned columns, for `casebook list` and `casebook up`.
 *
 * @example
 * renderTable(["system", "url"], [["rate-limiter", "http://127.0.0.1:8101"]]);
 * // system        url
 * // ------------  ---------------------
 * // rate-limiter  http://127.0.0.1:8101
 */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, col) =>
    Math.max(header.length, ...rows.map((row) => (row[col] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    widths
      .map((width, col) => (cells[col] ?? "").padEnd(width))
      .join("  ")
      .trimEnd();
  return [line(headers), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n") + "\n";
}
