import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readBlockHash } from "../../../src/gateway/rpc/blockParams.js";
import { cachePlan } from "../../../src/gateway/rpc/responseCache.js";
import {
  RawResult,
  asciiAnswer,
  keptAnswerBytes,
  keptResult,
  paramsJson,
  serializeResponse,
  stringifyJson,
} from "../../../src/gateway/rpc/serialize.js";
import type { JsonRpcId, JsonRpcResponse } from "../../../src/rpc/jsonRpc.js";
import { ExactNumber, ExactString } from "../../../src/rpc/jsonRpc.js";

/** Strings of the characters the shortcuts must tell apart: quotes, backslashes, controls, non-ASCII, surrogates. */
const awkwardString = fc.string({
  unit: fc.constantFrom(
    "a",
    "0",
    "x",
    "F",
    '"',
    "\\",
    "\n",
    "\u0000",
    "\u007f",
    "é",
    "\ud83d",
    "\ude00",
    " ",
  ),
  maxLength: 12,
});
const param = fc.oneof(
  awkwardString,
  fc.string(),
  fc.boolean(),
  fc.integer(),
  fc.constant(null),
  fc.dictionary(fc.string(), fc.string()),
  fc.array(fc.string(), { maxLength: 2 }),
);

describe("JSON written without JSON.stringify", () => {
  it("params: the same text as JSON.stringify for any params", () => {
    fc.assert(
      fc.property(fc.array(param, { maxLength: 4 }), (params) => {
        expect(paramsJson(params)).toBe(JSON.stringify(params));
      }),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.string()), (params) => {
        expect(paramsJson(params)).toBe(JSON.stringify(params));
      }),
    );
    expect(paramsJson(undefined)).toBe("[]");
    expect(paramsJson([`0x${"ab".repeat(32)}`, false])).toBe(JSON.stringify([`0x${"ab".repeat(32)}`, false]));
  });

  it("a cache key: the call as JSON.stringify writes its params, the hash read once", () => {
    const hash = `0x${"Ab".repeat(32)}`;
    for (const [method, params] of [
      ["eth_getBlockByHash", [hash, false]],
      ["eth_getBlockByHash", [hash, true]],
      ["eth_getTransactionReceipt", [hash]],
      ["eth_getTransactionByBlockHashAndIndex", [hash, "0x1"]],
      ["eth_getBalance", ["0xabc", { blockHash: hash }]],
    ] as const) {
      const request = { jsonrpc: "2.0" as const, id: 1, method, params: [...params] };
      expect(cachePlan(request, request, 10)?.key).toBe(`${method}\n${JSON.stringify(params)}`);
    }
    expect(paramsJson([hash, 'a"b'], 0)).toBe(JSON.stringify([hash, 'a"b']));
  });

  it("a result: the same text as JSON.stringify for any value", () => {
    fc.assert(
      fc.property(fc.oneof(awkwardString, fc.string(), fc.jsonValue()), (value) => {
        expect(stringifyJson(value)).toBe(JSON.stringify(value));
      }),
    );
  });
});

describe("a kept result's answer written as ASCII", () => {
  const block = { number: "0x3", hash: `0x${"ab".repeat(32)}`, extraData: "0x6869" };
  const ids = [
    7,
    0,
    -1.5,
    "client-id",
    "é✓",
    null,
    new ExactNumber("12345678901234567890"),
    new ExactString('"a\\u0041"', "aA"),
  ];

  it.each(ids)(
    "is the answer's text, as many bytes as characters, or left to the UTF-8 path (id %s)",
    (id) => {
      const json = JSON.stringify(block);
      const text = serializeResponse({ jsonrpc: "2.0", id, result: new RawResult(json) });
      const ascii = asciiAnswer({ jsonrpc: "2.0", id, result: keptResult(json) });
      if (ascii !== undefined) {
        expect(ascii).toBe(text);
        expect(Buffer.byteLength(ascii)).toBe(ascii.length);
        expect(Buffer.from(ascii, "latin1").equals(Buffer.from(text))).toBe(true);
      }
      // Every id written in ASCII takes the shortcut; every answer has the same text either way.
      expect(ascii !== undefined).toBe(Buffer.byteLength(text) === text.length);
      expect(serializeResponse({ jsonrpc: "2.0", id, result: keptResult(json) })).toBe(text);
    },
  );

  it("never for a result with characters beyond ASCII, nor a result not kept", () => {
    for (const extraData of ["0x6869 é", "\u0000", "✓", "\ud83d"]) {
      const json = JSON.stringify({ ...block, extraData });
      expect(asciiAnswer({ jsonrpc: "2.0", id: 1, result: keptResult(json) })).toBe(
        Buffer.byteLength(json) === json.length
          ? serializeResponse({ jsonrpc: "2.0", id: 1, result: new RawResult(json) })
          : undefined,
      );
    }
    expect(asciiAnswer({ jsonrpc: "2.0", id: 1, result: keptResult('"0x6869 é"') })).toBeUndefined();
    expect(asciiAnswer({ jsonrpc: "2.0", id: 1, result: new RawResult('"0x1"') })).toBeUndefined();
    expect(asciiAnswer({ jsonrpc: "2.0", id: 1, result: "0x1" })).toBeUndefined();
    expect(asciiAnswer({ jsonrpc: "2.0", id: 1, error: { code: 1, message: "m" } })).toBeUndefined();
  });
});

describe("a kept result's answer to a repeated id, as bytes", () => {
  const json = JSON.stringify({ number: "0x3", hash: `0x${"ab".repeat(32)}`, extraData: "0x6869" });
  const answerTo = (result: RawResult, id: JsonRpcId) => ({ jsonrpc: "2.0" as const, id, result });

  it("are the answer's UTF-8 bytes, built once for a run of the same id, and built again for another id", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(fc.constantFrom(1, 0, -1.5, 1e21, null, "a", "é", 'q"'), fc.integer(), fc.string()),
          {
            maxLength: 12,
          },
        ),
        (ids) => {
          const result = keptResult(json);
          let before: { id: unknown; bytes: Buffer | undefined } = { id: Symbol("none"), bytes: undefined };
          for (const id of ids) {
            const bytes = keptAnswerBytes(answerTo(result, id));
            if (bytes !== undefined) {
              expect(bytes.equals(Buffer.from(serializeResponse(answerTo(result, id))))).toBe(true);
              // Only the id of the answer before is answered from bytes, and the same bytes from the third on.
              expect(id).toBe(before.id);
              if (before.bytes !== undefined) expect(bytes).toBe(before.bytes);
            } else if (id === before.id) {
              // Ids whose JSON needs a scan (a string with escapes or beyond ASCII) are never kept as bytes.
              expect(
                typeof id === "string" && (JSON.stringify(id) !== `"${id}"` || !/^[ -~]*$/.test(id)),
              ).toBe(true);
            }
            before = { id, bytes };
          }
        },
      ),
    );
  });

  it("never for a result not kept, not ASCII, an id kept as written, an error or a batch", () => {
    const twice = (response: JsonRpcResponse | JsonRpcResponse[]) => {
      keptAnswerBytes(response);
      return keptAnswerBytes(response);
    };
    expect(twice(answerTo(keptResult(json), 7))).toBeDefined();
    expect(twice(answerTo(new RawResult(json, true), 7))).toBeUndefined();
    expect(twice(answerTo(keptResult('"0x6869 é"'), 7))).toBeUndefined();
    expect(twice(answerTo(keptResult(json), new ExactNumber("12345678901234567890")))).toBeUndefined();
    expect(twice(answerTo(keptResult(json), new ExactString('"a\\u0041"', "aA")))).toBeUndefined();
    expect(twice({ jsonrpc: "2.0", id: 7, error: { code: 1, message: "m" } })).toBeUndefined();
    expect(twice([answerTo(keptResult(json), 7)])).toBeUndefined();
  });
});

describe("a block hash read", () => {
  const HASH = /^0x[0-9a-f]{64}$/i;
  const hexDigit = fc.constantFrom(..."0123456789abcdefABCDEF".split(""));
  /** A hash, mixed case, with one character maybe swapped for a neighbour of the hex ranges, and maybe cut or grown. */
  const hashLike = fc
    .tuple(
      fc.constantFrom("0x", "0X", "0y", "1x", "0"),
      fc.string({ unit: hexDigit, minLength: 64, maxLength: 64 }),
      fc.nat(63),
      fc.option(fc.constantFrom(..."gG/:@`Ff9".split(""))),
      fc.constantFrom(0, 0, -1, 1),
    )
    .map(([prefix, digits, at, swap, grow]) => {
      const swapped = swap === null ? digits : digits.slice(0, at) + swap + digits.slice(at + 1);
      return prefix + (grow < 0 ? swapped.slice(1) : grow > 0 ? `${swapped}a` : swapped);
    });

  it("takes exactly 0x and 64 hex digits, lower-cased, as the pattern does", () => {
    fc.assert(
      fc.property(fc.oneof(hashLike, fc.string(), fc.integer(), fc.constant(null)), (value) => {
        const expected = typeof value === "string" && HASH.test(value) ? value.toLowerCase() : undefined;
        expect(readBlockHash(value)).toBe(expected);
        // Asked again for the same value (the plan, then the cache key): the same answer.
        expect(readBlockHash(value)).toBe(expected);
      }),
      { numRuns: 2_000 },
    );
  });

  it("answers the next value, not the last one", () => {
    const lower = `0x${"ab".repeat(32)}`;
    expect(readBlockHash(lower.toUpperCase().replace("0X", "0x"))).toBe(lower);
    expect(readBlockHash(`${lower}0`)).toBeUndefined();
    expect(readBlockHash(lower)).toBe(lower);
    expect(readBlockHash({ blockHash: lower })).toBeUndefined();
  });
});
