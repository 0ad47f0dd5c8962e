/**
 * Budget keys and Redis Cluster slots: one atomic script touches one slot, so every
 * reservation's lines share a hash tag — a tenant's (`{tenant}`: requests, tokens, per model,
 * spend) in one call, a deployment's own quota (`{dest:model@destination}`) in another. Two
 * deployments, or a tenant and a deployment, may live on different nodes.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { keySlot, sameSlot } from "@casebook/kit/cluster-slot";
import { planBudget, planDestination } from "../src/domain/budget-plan.ts";
import { parseModelList } from "../src/domain/model-catalog.ts";

const limits = { modelRpm: 10, modelTpm: 1_000, destinationRpm: 10, destinationTpm: 1_000 };
const model = parseModelList("smart=gpt-4o@east|gpt-4o@west>gpt-4o-mini@east").get("smart");

test("each reservation's keys share one cluster slot: the tenant's in one script, each deployment's in another", () => {
  assert.ok(model);
  const tenantLines = planBudget({
    tenant: { id: "acme", rpm: 10, tpm: 1_000 },
    model,
    limits,
    inputTokens: 10,
    maxOutputTokens: 10,
  }).lines;
  assert.equal(tenantLines.length, 4);
  assert.ok(sameSlot([...tenantLines.map((l) => l.key), "llm:{acme}:spend"]));
  const slots = new Set<number>();
  for (const deployment of model.tiers.flat()) {
    const lines = planDestination({ deployment, limits, reservedTokens: 20 }).lines;
    assert.equal(lines.length, 2);
    assert.ok(sameSlot(lines.map((l) => l.key)), deployment.id);
    slots.add(keySlot(lines[0]?.key ?? ""));
  }
  assert.equal(slots.size, 3, "three deployments, three tags: spread over the cluster");
});
