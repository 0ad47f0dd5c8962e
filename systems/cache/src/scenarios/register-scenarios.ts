/**
 * The console's scenarios of the cache (issue 23), on the node's HTTP sidecar, loopback only:
 * `lru-vs-tinylfu` (two private keyspaces on one zipf trace) and `primary-killed` (a private
 * cluster of node processes, its primary SIGKILLed). Neither touches this node's keyspace; a
 * run in hand is stopped when the sidecar closes.
 *
 * @example
 * registerCacheScenarios(service); // in main.ts's build, once the service exists
 */
import { registerScenarioRoutes, ScenarioRuns } from "@casebook/infra/http/scenario-runs";
import type { Service } from "@casebook/infra/http/service";
import { lruVsTinyLfuScenario } from "./lru-vs-tinylfu-scenario.ts";
import { primaryKilledScenario } from "./primary-killed-scenario.ts";

export { scenarioErrors } from "@casebook/infra/http/scenario-runs";

export function registerCacheScenarios(service: Service): void {
  const scenarios = new ScenarioRuns([lruVsTinyLfuScenario(), primaryKilledScenario()]);
  registerScenarioRoutes(service.app, scenarios);
  service.onClose(() => scenarios.drain());
}
