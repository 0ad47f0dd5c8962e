import type { SystemSummary } from "./api.ts";

/** The state in words as well as colour (never colour alone). */
export function HealthBadge({ health }: { health: SystemSummary["health"] }) {
  return (
    <span class={`badge badge-${health.state}`} title={health.detail ?? ""} data-health={health.state}>
      {health.state}
    </span>
  );
}
