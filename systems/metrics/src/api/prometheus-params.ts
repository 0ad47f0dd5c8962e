/**
 * Prometheus's HTTP API parameters: a time is Unix seconds (`1700000000.123`) or RFC 3339; a
 * duration (`step`, `timeout`) is seconds as a float or a PromQL duration (`15s`, `1m30s`);
 * a parameter may come in the query string (GET) or a urlencoded form (POST, Grafana's way),
 * and `match[]` may repeat. Each parser throws METRICS_QUERY_INVALID naming the parameter.
 *
 * @example
 * parseTimeParam("2024-01-01T00:00:00Z", "start"); // 1704067200000
 * parseDurationParam("15s", "step");                // 15000
 */
import { parsePromDurationMs } from "@casebook/kit/prom-duration";
import { errors } from "../errors.ts";

export type Params = Readonly<Record<string, string | string[] | undefined>>;

function invalid(name: string, detail: string): never {
  throw errors.create("METRICS_QUERY_INVALID", { detail, fields: { field: name } });
}

export function param(params: Params, name: string): string | undefined {
  const value = params[name];
  if (Array.isArray(value)) return value.at(-1);
  return value;
}

export function params(params: Params, name: string): string[] {
  const value = params[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

export function parseTimeParam(text: string, name: string): number {
  if (/^[-+]?\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  if (/^\d{4}-\d{2}-\d{2}T/.test(text)) {
    const ms = Date.parse(text);
    if (!Number.isNaN(ms)) return ms;
  }
  invalid(name, `invalid parameter "${name}": cannot parse "${text}" to a valid timestamp`);
}

export function parseDurationParam(text: string, name: string): number {
  if (/^\d+(\.\d+)?$/.test(text)) {
    const ms = Math.round(Number(text) * 1000);
    if (ms > 0) return ms;
  }
  const ms = parsePromDurationMs(text);
  if (ms !== undefined && ms > 0) return ms;
  invalid(name, `invalid parameter "${name}": cannot parse "${text}" to a valid duration`);
}

export function requireParam(p: Params, name: string): string {
  const value = param(p, name);
  if (value === undefined || value === "") invalid(name, `invalid parameter "${name}": missing`);
  return value;
}

export { invalid as invalidParam };
