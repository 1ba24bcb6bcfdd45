import type { V1EndpointSlice } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { endpointChanges } from "./endpointSliceHistory.js";

const slice = (
  ...endpoints: Array<[uid: string, ready?: boolean, terminating?: boolean]>
): V1EndpointSlice => ({
  addressType: "IPv4",
  endpoints: endpoints.map(([uid, ready, terminating]) => ({
    addresses: [`10.0.0.${uid.length}`],
    conditions: { ...(ready === undefined ? {} : { ready }), ...(terminating ? { terminating } : {}) },
    targetRef: { kind: "Pod", name: `pod-${uid}`, uid },
  })),
});

describe("endpointChanges", () => {
  it("records a state that comes back: not ready at start, ready, not ready again when unrouted", () => {
    const last = new Map<string, string>();
    const seen = [
      ...endpointChanges(last, [slice(["a", false])]),
      ...endpointChanges(last, [slice(["a", true])]),
      ...endpointChanges(last, [slice(["a", false])]),
    ];
    expect(seen.map((s) => s.ready)).toEqual([false, true, false]);
  });

  it("records nothing for a version that changed no endpoint, and each pod's change apart", () => {
    const last = new Map<string, string>();
    expect(endpointChanges(last, [slice(["a", true], ["bb", true])])).toHaveLength(2);
    expect(endpointChanges(last, [slice(["a", true], ["bb", true])])).toEqual([]);
    expect(endpointChanges(last, [slice(["a", true], ["bb", false, true])])).toEqual([
      { pod: "pod-bb", uid: "bb", address: "10.0.0.2", ready: false, terminating: true },
    ]);
  });

  it("reads an absent ready condition as ready and an absent terminating one as not, as discovery.k8s.io/v1 says", () => {
    expect(endpointChanges(new Map(), [slice(["a"])])).toMatchObject([{ ready: true, terminating: false }]);
  });
});
