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
  /**
   * As `call`, but an answer that comes later may go to `sink` instead (undefined returned): no promise between a
   * node's answer and the client's. Optional; `call` is used without it.
   */
  callInto?: (
    request: JsonRpcRequest,
    client: string,
    sink: (response: JsonRpcResponse) => void,
  ) => JsonRpcResponse | Promise<JsonRpcResponse> | undefined;
}

/** Where answerInto's answer goes when it is not given at once. Neither may throw. */
export interface AnswerSink {
  answered(answer: Answer): void;
  failed(error: unknown): void;
}

/**
 * The answer to a parsed body, the same for HTTP and WebSocket: admission by the rate limit, then the single call or
 * each call of a batch; notifications get no answer. Synchronous when every call is answered without a node
 * (eth_blockNumber, refusals), so the hot path allocates no promise.
 */
export function answer(parsed: ParsedBody, steps: AnswerSteps, client = ""): Answer | Promise<Answer> {
  return admission(parsed, steps, client) ?? admitted(parsed, steps, client);
}

/**
 * The rate limit's word on a body: its refusal, or (when the limit answers later) the whole answer to come; undefined
 * when admitted now.
 */
function admission(
  parsed: ParsedBody,
  steps: AnswerSteps,
  client: string,
): Answer | Promise<Answer> | undefined {
  const refused = steps.admit?.(parsed, client);
  if (refused instanceof Promise) return refused.then((r) => r ?? admitted(parsed, steps, client));
  return refused;
}

/**
 * As answer, with an answer that comes later handed to `sink` (undefined returned) rather than a promise: a single
 * call answered by a node reaches `sink` from the node's answer with no promise between (see AnswerSteps.callInto).
 */
export function answerInto(
  parsed: ParsedBody,
  steps: AnswerSteps,
  client: string,
  sink: AnswerSink,
): Answer | undefined {
  const single = parsed.kind === "single" && parsed.item.ok ? parsed.item.request : undefined;
  const callInto = steps.callInto;
  // Batches, notifications and errors as answer does.
  if (single === undefined || single.id === undefined || callInto === undefined)
    return settled(answer(parsed, steps, client), sink);
  const verdict = admission(parsed, steps, client);
  if (verdict) return settled(verdict, sink);
  const response = callInto(single, client, (r) => sink.answered({ body: r }));
  if (response === undefined) return undefined;
  return response instanceof Promise ? settled(admittedLater(response), sink) : { body: response };
}

const admittedLater = (response: Promise<JsonRpcResponse>): Promise<Answer> =>
  response.then((body) => ({ body }));

/** An answer now, or undefined with the later one to `sink`. */
function settled(answered: Answer | Promise<Answer>, sink: AnswerSink): Answer | undefined {
  if (!(answered instanceof Promise)) return answered;
  answered.then(
    (a) => sink.answered(a),
    (error: unknown) => sink.failed(error),
  );
  return undefined;
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
