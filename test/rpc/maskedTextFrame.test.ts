import { describe, expect, it } from "vitest";
import { maskedTextFrame } from "../../src/rpc/maskedTextFrame.js";

describe("maskedTextFrame", () => {
  it("frames text as one final text frame, masked with a zero key, its length in the shortest form", () => {
    expect([...maskedTextFrame("")]).toEqual([0x81, 0x80, 0, 0, 0, 0]);
    const short = maskedTextFrame("a".repeat(125));
    expect([...short.subarray(0, 6)]).toEqual([0x81, 0x80 | 125, 0, 0, 0, 0]);
    expect(short.subarray(6).toString("latin1")).toBe("a".repeat(125));
    expect([...maskedTextFrame("b".repeat(126)).subarray(0, 8)]).toEqual([0x81, 0xfe, 0, 126, 0, 0, 0, 0]);
    expect([...maskedTextFrame("c".repeat(65_535)).subarray(0, 8)]).toEqual([
      0x81, 0xfe, 0xff, 0xff, 0, 0, 0, 0,
    ]);
    const long = maskedTextFrame("d".repeat(65_536 + 258));
    expect([...long.subarray(0, 14)]).toEqual([0x81, 0xff, 0, 0, 0, 0, 0, 1, 1, 2, 0, 0, 0, 0]);
    expect(long.length).toBe(14 + 65_536 + 258);
  });

  it("frames text beyond ASCII as its UTF-8 bytes, the length counted in bytes", () => {
    const text = '{"params":["é\u{1F600}"]}';
    const utf8 = Buffer.from(text, "utf8");
    const frame = maskedTextFrame(text);
    expect([...frame.subarray(0, 6)]).toEqual([0x81, 0x80 | utf8.length, 0, 0, 0, 0]);
    expect(frame.subarray(6)).toEqual(utf8);
  });
});
