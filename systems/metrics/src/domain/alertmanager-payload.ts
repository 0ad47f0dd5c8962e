/**
 * The body Alertmanager POSTs to a webhook receiver (version 4), so a receiver written for
 * Alertmanager — a chat bridge, an incident tool — works unchanged: `status` (firing when any
 * alert fires), `groupLabels` (here the alert name: one notification per rule and evaluation),
 * `commonLabels`/`commonAnnotations` (what every alert shares), and `alerts` with RFC 3339
 * `startsAt`/`endsAt` (Go's zero time while firing) and a `fingerprint`.
 *
 * @example
 * const body = alertmanagerPayload({ receiver: "owner", alertname: "X", alerts, externalUrl, generatorUrl });
 */
import type { AlertToSend } from "./alert-state.ts";
import { fnv1a32 } from "./series-partition.ts";

export const GO_ZERO_TIME = "0001-01-01T00:00:00Z";

export interface AlertmanagerAlert {
  status: "firing" | "resolved";
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  generatorURL: string;
  fingerprint: string;
}

export interface AlertmanagerWebhook {
  version: "4";
  groupKey: string;
  truncatedAlerts: number;
  status: "firing" | "resolved";
  receiver: string;
  groupLabels: Record<string, string>;
  commonLabels: Record<string, string>;
  commonAnnotations: Record<string, string>;
  externalURL: string;
  alerts: AlertmanagerAlert[];
}

function common(maps: ReadonlyArray<Readonly<Record<string, string>>>): Record<string, string> {
  const [first, ...rest] = maps;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(first ?? {})) {
    if (rest.every((m) => m[name] === value)) out[name] = value;
  }
  return out;
}

export function alertmanagerPayload(input: {
  receiver: string;
  alertname: string;
  alerts: readonly AlertToSend[];
  externalUrl: string;
  generatorUrl: string;
}): AlertmanagerWebhook {
  const groupLabels = { alertname: input.alertname };
  return {
    version: "4",
    groupKey: `{}:{alertname=${JSON.stringify(input.alertname)}}`,
    truncatedAlerts: 0,
    status: input.alerts.some((a) => a.status === "firing") ? "firing" : "resolved",
    receiver: input.receiver,
    groupLabels,
    commonLabels: common(input.alerts.map((a) => a.labels)),
    commonAnnotations: common(input.alerts.map((a) => a.annotations)),
    externalURL: input.externalUrl,
    alerts: input.alerts.map((a) => ({
      status: a.status,
      labels: { ...a.labels },
      annotations: { ...a.annotations },
      startsAt: new Date(a.startsAtMs).toISOString(),
      endsAt: a.endsAtMs === undefined ? GO_ZERO_TIME : new Date(a.endsAtMs).toISOString(),
      generatorURL: input.generatorUrl,
      // Alertmanager's is a 64-bit hash of the label set; 16 hex digits of two 32-bit FNV-1a runs here.
      fingerprint:
        fnv1a32(a.fingerprint).toString(16).padStart(8, "0") +
        fnv1a32(`${a.fingerprint}\u0000`).toString(16).padStart(8, "0"),
    })),
  };
}
