/**
 * CA-04, CA-13, CA-19 and the sizing half of CA-23: the text's back-of-the-envelope numbers, recomputed from its
 * stated assumptions. Where the text rounds, the test pins both the exact value and the
 * text's reading of it: memory needs 17.2 nodes ("~17", really 18 machines), and a lost
 * node's slice is 80k req/s of which 76k are new misses ("~80k").
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  bigKeyLoad,
  dbRequestsPerS,
  estimateCacheCapacity,
  headroom,
  ramForDataGb,
  textAssumptions,
} from "../src/domain/capacity-estimate.ts";
import { policyErrors } from "../src/errors.ts";

const close = (actual: number, expected: number, what: string) =>
  assert.ok(
    Math.abs(actual - expected) < 1e-9 * Math.max(1, Math.abs(expected)),
    `${what}: ${actual} vs ${expected}`,
  );

describe("CA-04 sizing by memory and by throughput", () => {
  const e = estimateCacheCapacity(textAssumptions);

  test("CA-04 1e9 items x (1000 + 50 + 50) B = 1.1 TB", () => {
    close(e.dataTb, 1.1, "dataTb");
  });

  test("CA-04 ~17 nodes by memory at 64 GB (17.2: 18 whole machines), 25 by ops at 2M / 80k", () => {
    close(e.nodesByMemory, 1_100 / 64, "nodesByMemory");
    assert.equal(Math.round(e.nodesByMemory), 17, "the text's ~17");
    assert.equal(Math.ceil(e.nodesByMemory), 18, "whole machines memory alone needs");
    close(e.nodesByOps, 25, "nodesByOps");
  });

  test("CA-04 take the larger: 25 primaries (ops decide), 50 nodes with one replica each", () => {
    assert.equal(e.decidedBy, "ops");
    assert.equal(e.primaries, 25);
    assert.equal(e.totalNodes, 50);
  });

  test("CA-23 size by memory and by throughput, take the larger: ops for the text's numbers, memory for 2 KB values", () => {
    assert.equal(e.primaries, Math.max(Math.ceil(e.nodesByMemory), Math.ceil(e.nodesByOps)));
    const bigValues = estimateCacheCapacity({ ...textAssumptions, valueBytes: 2_000 });
    assert.equal(bigValues.decidedBy, "memory");
    assert.equal(bigValues.primaries, Math.ceil(2_100 / 64));
    assert.ok(bigValues.primaries > Math.ceil(bigValues.nodesByOps), "memory is the larger bound there");
  });

  test("CA-04 2 GB/s of values at peak, ~80 MB/s per node", () => {
    close(e.valuesGbPerS, 2, "valuesGbPerS");
    close(e.valuesMbPerSPerNode, 80, "valuesMbPerSPerNode");
  });

  test("CA-04 DB sees 100k req/s at 95% hits, 200k at 90%: 20k req/s per point of hit ratio", () => {
    assert.equal(e.dbReqPerS, 100_000);
    assert.equal(dbRequestsPerS(textAssumptions.opsPerS, 0.9), 200_000);
    close(e.dbReqPerSPerHitPoint, 20_000, "per point");
    assert.equal(dbRequestsPerS(2_000_000, 0.94) - dbRequestsPerS(2_000_000, 0.95), 20_000);
  });

  test("CA-04 losing 1 of 25 nodes cold: its 80k req/s slice hits the DB, 76k of them new misses", () => {
    close(e.lostNodeSliceReqPerS, 80_000, "slice");
    close(e.lostNodeSliceReqPerS / textAssumptions.opsPerS, 0.04, "4% of the keys");
    // The text says "+80k misses/s"; 5% of that slice missed already, so the increase is 76k.
    close(e.lostNodeExtraMissesPerS, 76_000, "extra misses");
  });

  test("CA-04 bad inputs are refused naming the field", () => {
    assert.throws(
      () => estimateCacheCapacity({ ...textAssumptions, opsPerNode: 0 }),
      (error) => policyErrors.is(error, "CACHE_POLICY_CONFIG_INVALID") && error.fields.field === "opsPerNode",
    );
    assert.throws(() => estimateCacheCapacity({ ...textAssumptions, hitRatio: 1.5 }), /hit|range/i);
  });
});

describe("CA-13 headroom", () => {
  test("CA-13 plan 70-80% of RAM for data: a 64 GB machine gets maxmemory 44.8-51.2 GB", () => {
    close(headroom(64, 0.7).maxmemoryGb, 44.8, "70%");
    close(headroom(64, 0.8).maxmemoryGb, 51.2, "80%");
    close(headroom(64, 0.75).reservedGb, 16, "reserve at 75%");
    assert.throws(
      () => headroom(64, 1),
      (e) => policyErrors.is(e, "CACHE_POLICY_CONFIG_INVALID"),
    );
  });

  test("CA-13 the text's 64 GB usable for data means 80-91 GB machines; 25 primaries fit 64 GB ones", () => {
    close(ramForDataGb(64, 0.8), 80, "at 80%");
    assert.equal(ramForDataGb(64, 0.7).toFixed(1), "91.4");
    // With 25 primaries each holds 44 GB: within a 64 GB machine's 70% (44.8 GB), barely.
    const e = estimateCacheCapacity(textAssumptions);
    close(e.dataGbPerPrimary, 44, "per primary");
    assert.ok(e.dataGbPerPrimary <= headroom(64, 0.7).maxmemoryGb);
  });
});

describe("CA-19 big key", () => {
  test("CA-19 a 5 MB value read 1,000x/s is 5 GB/s from one node: 4 x 10 GbE links, 62x a node's share", () => {
    const load = bigKeyLoad(5e6, 1_000, 10);
    assert.equal(load.bytesPerS, 5e9);
    close(load.gbitPerS, 40, "Gbit/s");
    close(load.linksFilled, 4, "10 GbE links");
    const perNodeMbPerS = estimateCacheCapacity(textAssumptions).valuesMbPerSPerNode;
    close(load.bytesPerS / 1e6 / perNodeMbPerS, 62.5, "times a node's average value traffic");
  });
});
