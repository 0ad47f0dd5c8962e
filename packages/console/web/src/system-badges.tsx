import type { SystemSummary } from "./api.ts";

/** The state in words as well as colour (never colour alone). */
export function HealthBadge({ health }: { health: SystemSummary["health"] }) {
  return (
    <span class={`badge badge-${health.state}`} title={health.detail ?? ""} data-health={health.state}>
      {health.state}
    </span>
  );
}

/** Where it listens: its URL, then each port by name (HTTP, RESP). */
export function Address({ system }: { system: Pick<SystemSummary, "url" | "ports"> }) {
  return (
    <p class="address">
      <a href={system.url}>{system.url}</a>{" "}
      {system.ports.map((p) => (
        <span class="port" key={p.name}>
          {p.name} {p.port}
        </span>
      ))}
    </p>
  );
}
