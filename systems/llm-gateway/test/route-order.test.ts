/**
 * The routing domain (LG-09, LG-10, LG-19): the chain syntax, the order a request tries
 * deployments in (tier by tier, least loaded first, ties in turn), and what counts as a
 * fallback to declare.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseDestinationList, parseModelList } from "../src/domain/model-catalog.ts";
import { fallbackKind, orderDeployments } from "../src/domain/route-order.ts";

test("LG-19 a logical name maps to a chain: tiers joined by >, equal deployments by |, @destination", () => {
  const catalog = parseModelList(
    "fast=gpt-4o-mini,smart=gpt-4o@east|gpt-4o@west>gpt-4o-mini@east>llama@own,plain",
  );
  assert.deepEqual(catalog.get("fast")?.tiers, [
    [{ id: "gpt-4o-mini@default", destination: "default", upstreamModel: "gpt-4o-mini" }],
  ]);
  assert.deepEqual(
    catalog.get("smart")?.tiers.map((tier) => tier.map((d) => d.id)),
    [["gpt-4o@east", "gpt-4o@west"], ["gpt-4o-mini@east"], ["llama@own"]],
  );
  assert.equal(catalog.get("plain")?.upstreamModel, "plain");
  assert.throws(() => parseModelList("a=x>x"), /lists x@default twice/);
  assert.throws(() => parseModelList("a,a"), /listed twice/);
  assert.throws(() => parseModelList("a=x>"), /not a list/);
  assert.deepEqual(
    [...parseDestinationList("east=http://e/v1,west=https://w/v1")],
    [
      ["east", "http://e/v1"],
      ["west", "https://w/v1"],
    ],
  );
  assert.throws(() => parseDestinationList("east=ftp://e"), /only http/);
  assert.throws(() => parseDestinationList("east=http://a,east=http://b"), /twice/);
});

test("LG-09 tiers in order; inside a tier the least loaded first, ties taken in turn", () => {
  const tiers = parseModelList("m=a@e|a@w>b@e").get("m")?.tiers ?? [];
  const ids = (load: Record<string, number>, turn: number) =>
    orderDeployments(tiers, (d) => load[d.id] ?? 0, turn).map((c) => `${c.deployment.id}/${c.tier}`);
  assert.deepEqual(ids({}, 0), ["a@e/0", "a@w/0", "b@e/1"]);
  assert.deepEqual(ids({}, 1), ["a@w/0", "a@e/0", "b@e/1"]);
  assert.deepEqual(ids({ "a@e": 0, "a@w": 3 }, 1), ["a@e/0", "a@w/0", "b@e/1"]);
  assert.deepEqual(ids({ "b@e": -5 }, 0), ["a@e/0", "a@w/0", "b@e/1"], "a lower tier never jumps ahead");
});

test("LG-10 a fallback is another model (declared as such), or the same model in a later tier; a peer in the first tier is load balancing", () => {
  const [[east, west] = [], [mini] = []] = parseModelList("m=a@e|a@w>b@e").get("m")?.tiers ?? [];
  assert.ok(east && west && mini);
  assert.equal(fallbackKind(east, east, 0), "none");
  assert.equal(fallbackKind(east, west, 0), "none");
  assert.equal(fallbackKind(east, west, 1), "destination");
  assert.equal(fallbackKind(east, mini, 1), "model");
});
