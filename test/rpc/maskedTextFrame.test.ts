import { describe, expect, it } from "vitest";
import { maskedTextFrame } from "../../src/rpc/maskedTextFrame.js";

/** The frame's bytes, as written to the connection. */
const bytes = (text: string) => Buffer.from(maskedTextFrame(text)!, "latin1");

describe("maskedTextFrame", () => {
  it("frames ASCII text as one final text frame, masked with a zero key, its length in the shortest form", () => {
    expect([...bytes("")]).toEqual([0x81, 0x80, 0, 0, 0, 0]);
    const short = bytes("a".repeat(125));
    expect([...short.subarray(0, 6)]).toEqual([0x81, 0x80 | 125, 0, 0, 0, 0]);
    expect(short.subarray(6).toString("latin1")).toBe("a".repeat(125));
    expect([...bytes("b".repeat(126)).subarray(0, 8)]).toEqual([0x81, 0xfe, 0, 126, 0, 0, 0, 0]);
    expect([...bytes("c".repeat(65_535)).subarray(0, 8)]).toEqual([0x81, 0xfe, 0xff, 0xff, 0, 0, 0, 0]);
    const long = bytes("d".repeat(65_536 + 258));
    expect([...long.subarray(0, 14)]).toEqual([0x81, 0xff, 0, 0, 0, 0, 0, 1, 1, 2, 0, 0, 0, 0]);
    expect(long.length).toBe(14 + 65_536 + 258);
  });

  it("leaves text beyond ASCII to the caller", () => {
    expect(maskedTextFrame('{"params":["é"]}')).toBeUndefined();
    expect(maskedTextFrame("\u{1F600}")).toBeUndefined();
  });
});
