import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NOTIFICATIONS, conformanceCalls } from "./calls.js";
import { INTENDED_DIFFERENCES, differencesTable } from "./intendedDifferences.js";

const BEGIN = "<!-- conformance:begin (made from test/conformance/intendedDifferences.ts) -->";
const END = "<!-- conformance:end -->";

describe("the intended differences, as documented", () => {
  it("docs/gateway.md shows the list the conformance suite checks", () => {
    const docs = readFileSync(join(import.meta.dirname, "../../docs/gateway.md"), "utf8");
    const start = docs.indexOf(BEGIN);
    const end = docs.indexOf(END);
    expect(start, `docs/gateway.md lacks ${BEGIN}`).toBeGreaterThanOrEqual(0);
    // On a mismatch, paste the expected table between the markers.
    expect(docs.slice(start + BEGIN.length, end).trim()).toBe(differencesTable());
  });

  it("names only calls of the table, each once", () => {
    const facts = {
      head: 1,
      finalized: 0,
      safe: 1,
      account: "0x",
      emitter: "0x",
      logBlockHash: "0x",
      logTransaction: "0x",
    };
    const names = [...conformanceCalls(facts).map((c) => c.name), ...Object.keys(NOTIFICATIONS)];
    expect(new Set(names).size).toBe(names.length);
    const listed = INTENDED_DIFFERENCES.flatMap((d) => d.calls);
    expect(listed.filter((c) => !names.includes(c))).toEqual([]);
    expect(new Set(listed).size).toBe(listed.length);
  });
});
