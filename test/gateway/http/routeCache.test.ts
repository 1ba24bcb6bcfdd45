import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RouteCache } from "../../../src/gateway/http/routeCache.js";
import { matchRoute } from "../../../src/gateway/http/routes.js";
import type { NetworkRoute } from "../../../src/gateway/http/routes.js";

const routes: NetworkRoute[] = [
  { network: "mainnet", hosts: ["eth.example.org"], path: "/mainnet", default: true },
  { network: "sepolia", hosts: ["sepolia.example.org"], path: "/sepolia", default: false },
];

describe("routes looked up through the cache", () => {
  it("are the routes matched afresh, for any run of hosts and paths, repeated or not", () => {
    const host = fc.constantFrom(
      undefined,
      "eth.example.org",
      "sepolia.example.org",
      "SEPOLIA.example.org:8545",
      "x",
    );
    const path = fc.constantFrom("/", "", "/ws", "/mainnet", "/sepolia/ws", "/sepolia/", "/other", "/?a=1");
    fc.assert(
      fc.property(fc.array(fc.tuple(host, path), { maxLength: 30 }), (requests) => {
        const cache = new RouteCache(routes);
        for (const [h, p] of requests) expect(cache.of(h, p)).toEqual(matchRoute(routes, h, p));
      }),
    );
  });
});
