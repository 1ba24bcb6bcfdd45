import { Agent, request } from "node:http";
import { isDeepStrictEqual } from "node:util";

/** What a client reads of one answer: its status, its headers as sent (names, order, values; the date left out), its body. */
interface RawAnswer {
  status: number | undefined;
  headers: string[];
  body: string;
}

function answerOf(url: string, body: string, agent: Agent): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", agent, headers: { "content-type": "application/json" } });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const headers: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2)
          if (res.rawHeaders[i]!.toLowerCase() !== "date")
            headers.push(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        resolve({ status: res.statusCode, headers, body: Buffer.concat(chunks).toString("hex") });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * Checks that two servers answer a call alike, as a client on a kept-alive connection reads it: the same status, the
 * same headers in the same order (content-type, content-length, keep-alive; the date aside) and the same bytes, the
 * last of three answers each (a server may build an answer it repeats on the second). Throws when they differ: a
 * bench comparing them would compare different work. Returns the answer's length in bytes.
 */
export async function expectSameAnswer(url: string, reference: string, call: unknown): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const body = JSON.stringify(call);
    const last = async (at: string) => {
      await answerOf(at, body, agent);
      await answerOf(at, body, agent);
      return answerOf(at, body, agent);
    };
    const [a, b] = [await last(url), await last(reference)];
    if (!isDeepStrictEqual(a, b))
      throw new Error(
        `${url} and ${reference} answer ${body.slice(0, 120)} differently:\n${JSON.stringify(a).slice(0, 400)}\n` +
          JSON.stringify(b).slice(0, 400),
      );
    return a.body.length / 2;
  } finally {
    agent.destroy();
  }
}
