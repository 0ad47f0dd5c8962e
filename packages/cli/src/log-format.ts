/**
 * How a child's log line is shown: prefixed with the system's name, and — on a
 * terminal — its JSON (pino's shape: level, time, msg, fields) shortened to one
 * readable line. Off a terminal lines pass through unchanged after the prefix,
 * so `casebook up | jq -R 'split(" | ")[1] | fromjson'` still works.
 *
 * @example
 * formatLogLine("alpha", '{"level":30,"time":0,"msg":"listening","port":8101}',
 *   { pretty: true, color: false, nameWidth: 5 }, 0);
 * // "alpha | 00:00:00.000 INFO  listening port=8101"   (time in the local zone)
 */
export interface LogStyle {
  /** Shorten JSON log lines to "time LEVEL msg key=value". */
  pretty: boolean;
  /** ANSI colours for names and levels. */
  color: boolean;
  /** Names are padded to this width so the lines align. */
  nameWidth: number;
}

const palette = [36, 35, 33, 32, 34, 96, 95, 93, 92, 94];
const pinoLevels: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};
const levelColors: Record<string, number> = { WARN: 33, ERROR: 31, FATAL: 31, DEBUG: 90, TRACE: 90 };
/** Fields the compact form drops: shown elsewhere in the line, or noise on a developer's terminal. */
const hiddenFields = new Set(["level", "time", "msg", "message", "pid", "hostname", "v"]);

/** One output line for `line` of system `name`; `index` picks the name's colour. */
export function formatLogLine(name: string, line: string, style: LogStyle, index: number): string {
  const label = name.padEnd(style.nameWidth);
  const prefix = style.color ? paint(label, palette[index % palette.length]!) : label;
  const body = style.pretty ? (compactJsonLog(line, style.color) ?? line) : line;
  return `${prefix} | ${body}`;
}

/** The compact form of a JSON log line, or undefined when the line is not a JSON object. */
export function compactJsonLog(line: string, color: boolean): string | undefined {
  if (!line.startsWith("{")) return undefined;
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return undefined;
  const record = entry as Record<string, unknown>;
  const level = levelName(record.level);
  const parts: string[] = [];
  const time = timeOf(record.time);
  if (time !== undefined) parts.push(time);
  if (level !== undefined) {
    const padded = level.padEnd(5);
    parts.push(color && levelColors[level] !== undefined ? paint(padded, levelColors[level]!) : padded);
  }
  const msg = record.msg ?? record.message;
  if (typeof msg === "string") parts.push(msg);
  for (const [key, value] of Object.entries(record)) {
    if (!hiddenFields.has(key)) parts.push(`${key}=${fieldValue(value)}`);
  }
  return parts.join(" ");
}

function levelName(level: unknown): string | undefined {
  if (typeof level === "number") return pinoLevels[level] ?? String(level);
  if (typeof level === "string") return level.toUpperCase();
  return undefined;
}

function timeOf(time: unknown): string | undefined {
  if (typeof time !== "number" && typeof time !== "string") return undefined;
  const date = new Date(time);
  if (Number.isNaN(date.getTime())) return undefined;
  const two = (n: number) => String(n).padStart(2, "0");
  const ms = String(date.getMilliseconds()).padStart(3, "0");
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}.${ms}`;
}

function fieldValue(value: unknown): string {
  if (typeof value === "string") return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  // pino serializes errors as {type, message, stack}: the message is what fits on one line.
  if (typeof value === "object" && value !== null && "message" in value && "stack" in value) {
    return JSON.stringify(String((value as { message: unknown }).message));
  }
  return JSON.stringify(value) ?? String(value);
}

function paint(text: string, code: number): string {
  return `\u001b[${code}m${text}\u001b[0m`;
}
