import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { callsInto, majorGcInstructions } from "../../bench/callgrindTotals.js";

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

/** A count a major collection fell in: a marking step called from an allocation, with a call of its own. */
const WITH_MAJOR_GC = `events: Ir
fn=(1) Builtins_CallFunction
0 1000
cfn=(2) v8::internal::IncrementalMarking::Step(double, v8::internal::StepOrigin)
calls=1 0
0 700
fn=(2)
15 300
+2 100
cfn=(3) v8::internal::MarkingVisitorBase::ProcessWorklist()
calls=4 0
* 300
fn=(3)
0 300
fn=(4) v8::internal::Heap::MarkCompact()
0 50
fn=(5) v8::internal::Heap::Scavenge()
0 80
`;

describe("majorGcInstructions", () => {
  it("counts the marking steps and the mark-compact pause inclusively, a name first seen as a callee included", () => {
    const file = join(dir, "callgrind.major");
    writeFileSync(file, WITH_MAJOR_GC);
    // Step: 300 + 100 of its own and 300 in the visitor it called; MarkCompact: 50. Not the scavenge, nor the
    // visitor's own lines again (they are in Step's call line), nor the caller's line for Step.
    expect(majorGcInstructions(file)).toBe(750);
  });

  it("is 0 for a count without one", () => {
    const file = join(dir, "callgrind.minor");
    writeFileSync(file, DUMP);
    expect(majorGcInstructions(file)).toBe(0);
  });
});
