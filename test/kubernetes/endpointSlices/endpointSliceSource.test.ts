import { KubeConfig } from "@kubernetes/client-node";
import nock from "nock";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  EndpointSliceSource,
  upstreamsFromSlices,
} from "../../../src/kubernetes/endpointSlices/endpointSliceSource.js";
import type { ServiceBinding } from "../../../src/kubernetes/endpointSlices/endpointSliceSource.js";
import { silentLogger } from "../../../src/log/logger.js";
import { waitFor } from "../../support/waitFor.js";

const SERVER = "https://k8s.test:6443";
const SLICES = "/apis/discovery.k8s.io/v1/namespaces/eth/endpointslices";
const binding: ServiceBinding = { network: "mainnet", namespace: "eth", service: "light-mainnet" };
const selector = "kubernetes.io/service-name=light-mainnet";

function slice(name: string, endpoints: [pod: string, ip: string, ready: boolean][], resourceVersion = "1") {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name, namespace: "eth", resourceVersion },
    addressType: "IPv4",
    ports: [
      { name: "http", port: 8545, protocol: "TCP" },
      { name: "ws", port: 8546, protocol: "TCP" },
    ],
    endpoints: endpoints.map(([pod, ip, ready]) => ({
      addresses: [ip],
      conditions: { ready },
      targetRef: { kind: "Pod", name: pod, namespace: "eth" },
    })),
  };
}
const event = (type: string, object: unknown) => `${JSON.stringify({ type, object })}\n`;

describe("upstreamsFromSlices", () => {
  it("keeps only ready endpoints, with URLs from the named ports", () => {
    const upstreams = upstreamsFromSlices(binding, [
      slice("a", [
        ["light-1", "10.0.0.11", false],
        ["light-0", "10.0.0.10", true],
      ]),
    ] as never);
    expect(upstreams).toEqual([
      {
        name: "light-0",
        network: "mainnet",
        httpUrl: "http://10.0.0.10:8545",
        wsUrl: "ws://10.0.0.10:8546",
        routed: true,
      },
    ]);
  });

  it("sends WebSocket to the HTTP port when the Service names no ws port", () => {
    const s = { ...slice("a", [["light-0", "10.0.0.10", true]]), ports: [{ name: "rpc", port: 8600 }] };
    expect(upstreamsFromSlices(binding, [s] as never)).toMatchObject([
      { httpUrl: "http://10.0.0.10:8600", wsUrl: "ws://10.0.0.10:8600" },
    ]);
  });

  it("brackets IPv6 addresses and treats an unknown (absent) ready condition as ready, as the API says", () => {
    const s = slice("a", [["light-0", "fd00::1", true]]);
    const unknown = {
      ...slice("b", []),
      endpoints: [
        { addresses: ["10.0.0.9"], targetRef: { name: "light-9" } },
        { addresses: ["10.0.0.8"], conditions: {}, targetRef: { name: "light-8" } },
      ],
    };
    expect(upstreamsFromSlices(binding, [s, unknown] as never).map((u) => u.httpUrl)).toEqual([
      "http://[fd00::1]:8545",
      "http://10.0.0.8:8545",
      "http://10.0.0.9:8545",
    ]);
  });

  it("lists an endpoint that two slices hold (while the controller moves it) once, ready if either says so", () => {
    const upstreams = upstreamsFromSlices(binding, [
      slice("a", [["light-0", "10.0.0.10", false]]),
      slice("b", [
        ["light-0", "10.0.0.10", true],
        ["light-1", "10.0.0.11", true],
      ]),
      slice("c", [["light-1", "10.0.0.11", true]]),
    ] as never);
    expect(upstreams.map((u) => u.name)).toEqual(["light-0", "light-1"]);
  });
});

describe("EndpointSliceSource at the wire", () => {
  let kubeConfig: KubeConfig;
  const sources: EndpointSliceSource[] = [];

  beforeAll(() => {
    kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "test", server: SERVER, skipTLSVerify: true }],
      users: [{ name: "test", token: "t0ken" }],
      contexts: [{ name: "test", cluster: "test", user: "test", namespace: "eth" }],
      currentContext: "test",
    });
    nock.disableNetConnect();
  });
  afterEach(async () => {
    for (const source of sources.splice(0)) await source.close();
    nock.abortPendingRequests();
    nock.cleanAll();
  });
  afterAll(() => nock.enableNetConnect());

  it("lists, follows the watch, resumes a dropped watch and relists on 410 Gone", async () => {
    const base = { labelSelector: selector, allowWatchBookmarks: "true", watch: "true" };
    nock(SERVER)
      .matchHeader("authorization", "Bearer t0ken")
      .get(SLICES)
      .query({ labelSelector: selector })
      .reply(200, {
        metadata: { resourceVersion: "100" },
        items: [slice("s1", [["light-0", "10.0.0.10", true]])],
      })
      // light-0 turns unready and light-1 ready, then the connection drops.
      .get(SLICES)
      .query({ ...base, resourceVersion: "100" })
      .reply(
        200,
        event(
          "MODIFIED",
          slice(
            "s1",
            [
              ["light-0", "10.0.0.10", false],
              ["light-1", "10.0.0.11", true],
            ],
            "101",
          ),
        ),
      )
      .get(SLICES)
      .query({ ...base, resourceVersion: "101" })
      .reply(200, event("ERROR", { kind: "Status", code: 410, reason: "Expired" }))
      .get(SLICES)
      .query({ labelSelector: selector })
      .reply(200, {
        metadata: { resourceVersion: "200" },
        items: [
          slice(
            "s1",
            [
              ["light-1", "10.0.0.11", true],
              ["light-2", "10.0.0.12", true],
            ],
            "150",
          ),
        ],
      })
      .get(SLICES)
      .query({ ...base, resourceVersion: "200" })
      .delay(60_000)
      .reply(200, "");
    const source = new EndpointSliceSource({ kubeConfig, services: [binding], logger: silentLogger() });
    sources.push(source);
    const changes: string[] = [];
    source.onChange((network) => changes.push(network));
    const names = () =>
      source
        .upstreams("mainnet")
        .map((u) => u.name)
        .join();
    await waitFor(() => nock.isDone() && names() === "light-1,light-2", {
      what: "the relist after 410 Gone",
    });
    expect(changes.length).toBeGreaterThanOrEqual(3);
    expect(new Set(changes)).toEqual(new Set(["mainnet"]));
    expect(source.upstreams("other")).toEqual([]);
  });

  it("retries a failed list with backoff instead of stopping", async () => {
    nock(SERVER)
      .get(SLICES)
      .query({ labelSelector: selector })
      .reply(500, { kind: "Status", code: 500 })
      .get(SLICES)
      .query({ labelSelector: selector })
      .reply(200, {
        metadata: { resourceVersion: "7" },
        items: [slice("s1", [["light-0", "10.0.0.10", true]])],
      })
      .get(SLICES)
      .query({ labelSelector: selector, allowWatchBookmarks: "true", watch: "true", resourceVersion: "7" })
      .delay(60_000)
      .reply(200, "");
    const source = new EndpointSliceSource({ kubeConfig, services: [binding], logger: silentLogger() });
    sources.push(source);
    await waitFor(() => source.upstreams("mainnet").length === 1, {
      what: "the list after a 500",
      timeoutMs: 5000,
    });
    expect(source.upstreams("mainnet")[0]?.httpUrl).toBe("http://10.0.0.10:8545");
  });
});
