import { homedir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lightfleetCacheDir } from "./cacheDir.js";

describe("lightfleetCacheDir", () => {
  it("is LIGHTFLEET_CACHE_DIR when set, so a cold run can point every built tool at an empty directory", () => {
    expect(lightfleetCacheDir({ LIGHTFLEET_CACHE_DIR: "/tmp/cold/x", XDG_CACHE_HOME: "/xdg" })).toBe(
      "/tmp/cold/x",
    );
  });

  it("is $XDG_CACHE_HOME/lightfleet, else ~/.cache/lightfleet; an empty variable counts as unset", () => {
    expect(lightfleetCacheDir({ XDG_CACHE_HOME: "/xdg" })).toBe("/xdg/lightfleet");
    expect(lightfleetCacheDir({ LIGHTFLEET_CACHE_DIR: "", XDG_CACHE_HOME: "" })).toBe(
      join(homedir(), ".cache", "lightfleet"),
    );
    expect(lightfleetCacheDir({})).toBe(join(homedir(), ".cache", "lightfleet"));
  });
});
