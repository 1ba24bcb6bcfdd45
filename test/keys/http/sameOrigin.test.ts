import { describe, expect, it } from "vitest";
import { crossSiteReason } from "../../../src/keys/http/sameOrigin.js";

const post = (origin: string | undefined, extra: { protocol?: string; site?: string } = {}) =>
  crossSiteReason({
    method: "POST",
    secFetchSite: extra.site,
    origin,
    host: "keys.example.org",
    protocol: extra.protocol ?? "https",
  });

describe("crossSiteReason", () => {
  it("accepts the same origin, with or without Sec-Fetch-Site, and requests without Origin (curl, the CLI)", () => {
    expect(post("https://keys.example.org")).toBeUndefined();
    expect(post("https://keys.example.org", { site: "same-origin" })).toBeUndefined();
    expect(post(undefined)).toBeUndefined();
    expect(
      crossSiteReason({
        method: "GET",
        secFetchSite: "cross-site",
        origin: "x",
        host: "h",
        protocol: "http",
      }),
    ).toBeUndefined();
  });

  it.each([
    ["foo", "malformed Origin"],
    ["", "malformed Origin"],
    ["http://[::1", "malformed Origin"],
    ["https://keys.example.org/path", "malformed Origin"],
    ["null", "Origin null"],
    ["http://keys.example.org", "Origin of another scheme"],
    ["https://evil.example", "Origin of another host"],
    ["https://keys.example.org:8443", "Origin of another host"],
  ])("refuses Origin %j (%s)", (origin, reason) => {
    expect(post(origin)).toBe(reason);
  });

  it("refuses an Origin when the Host header is not a host, rather than throwing", () => {
    expect(
      crossSiteReason({
        method: "POST",
        secFetchSite: undefined,
        origin: "http://a",
        host: "a b[",
        protocol: "http",
      }),
    ).toBe("Origin of another host");
  });

  it("refuses what the browser marks as cross-site or same-site", () => {
    expect(post("https://keys.example.org", { site: "cross-site" })).toMatch(/Sec-Fetch-Site/);
    expect(post(undefined, { site: "same-site" })).toMatch(/Sec-Fetch-Site/);
  });
});
