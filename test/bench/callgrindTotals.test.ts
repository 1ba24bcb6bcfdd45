import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { callsInto } from "../../bench/callgrindTotals.js";

const dir = mkdtempSync(join(tmpdir(), "lightfleet-callgrind-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A callgrind dump in its compressed form: a name is given with its id once, then the id alone. */
const DUMP = `events: Ir
fn=(1) Builtins_InterpreterEntryTrampoline
cfn=(2) v8::internal::Runtime_DefineKeyedOwnPropertyInLiteral(int, unsigned long*, v8::internal::Isolate*)
calls=12 0
0 400
cfn=(3) v8::internal::Runtime_CreateObjectLiteral(int, unsigned long*, v8::internal::Isolate*)
calls=5 0
0 100
fn=(4) Builtins_CallFunction
cfn=(2)
calls=6 0
0 200
fn=(2)
0 50
`;

describe("callsInto", () => {
  it("adds up the calls into a function across callers, its name given once and then by id", () => {
    const file = join(dir, "callgrind.out");
    writeFileSync(file, DUMP);
    expect(callsInto(file, "Runtime_DefineKeyedOwnPropertyInLiteral")).toBe(18);
    expect(callsInto(file, "Runtime_CreateObjectLiteral")).toBe(5);
    expect(callsInto(file, "Runtime_NotCalled")).toBe(0);
  });
});
