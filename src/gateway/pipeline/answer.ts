import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import type { ParsedBody } from "../rpc/parseRequest.js";

/** What a body gets back: nothing for notifications only. */
export type Body = JsonRpcResponse | JsonRpcResponse[] | undefined;

/** A body the rate limit did not admit: its answer, and when to try again. */
export type Refusal = { body: JsonRpcResponse | JsonRpcResponse[]; retryAfterMs: number } | undefined;

/** The answer to one body; `retryAfterMs` is set when the rate limit refused it (HTTP 429). */
export interface Answer {
  body: Body;
  retryAfterMs?: number;
}

/**
 * What answering a body takes, per network and transport; made once, not per request (the client's address is an
 * argument), so answering allocates no closure.
 */
export interface AnswerSteps {
  /** Takes the body's calls from the client's budget: the refusal when they do not fit. */
  admit?: (parsed: ParsedBody, client: string) => Refusal | Promise<Refusal>;
  /** Answers one call (WebSocket adds its subscriptions in front of the network's handler). */
  call: (request: JsonRpcRequest, client: string) => JsonRpcResponse | Promise<JsonRpcResponse>;
}

/**
 * The answer to a parsed body, the same for HTTP and WebSocket: admission by the rate limit, then the single call or
 * each call of a batch; notifications get no answer. Synchronous when every call is answered without a node
 * (eth_blockNumber, refusals), so the hot path allocates no promise.
 */
export function answer(parsed: ParsedBody, steps: AnswerSteps, client = ""): Answer | Promise<Answer> {
  const refused = steps.admit?.(parsed, client);
  if (refused instanceof Promise) return refused.then((r) => (r ? r : admitted(parsed, steps, client)));
  if (refused) return refused;
  return admitted(parsed, steps, client);
}

function admitted(parsed: ParsedBody, steps: AnswerSteps, client: string): Answer | Promise<Answer> {
  const body = answerCalls(parsed, steps, client);
  return body instanceof Promise ? body.then((b) => ({ body: b })) : { body };
}

/** Calls `steps.call` as a method: steps may be an object whose calls read its own state (a WebSocket session). */
function answerCalls(parsed: ParsedBody, steps: AnswerSteps, client: string): Body | Promise<Body> {
  if (parsed.kind === "error") return parsed.response;
  if (parsed.kind === "single") {
    if (!parsed.item.ok) return parsed.item.response;
    const notification = parsed.item.request.id === undefined;
    const response = steps.call(parsed.item.request, client);
    if (response instanceof Promise) return notification ? response.then(() => undefined) : response;
    return notification ? undefined : response;
  }
  return Promise.all(
    parsed.items.map((item) => (item.ok ? steps.call(item.request, client) : item.response)),
  ).then((responses) => {
    const answered = responses.filter((_, i) => {
      const item = parsed.items[i]!;
      return !item.ok || item.request.id !== undefined;
    });
    return answered.length > 0 ? answered : undefined;
  });
}
