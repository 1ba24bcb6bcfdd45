import type { JsonRpcRequest } from "../../rpc/jsonRpc.js";
import { RpcTransportError } from "../../rpc/jsonRpc.js";
import { leadingId } from "../../rpc/answerLayout.js";
import type { TextSink } from "../../rpc/wsRpcClient.js";
import { forward } from "./forward.js";
import { readNodeAnswer } from "./nodeAnswer.js";
import type { ResponseSink } from "./upstreams.js";

/** A -32602 (invalid params) answer, as node software writes it. */
const INVALID_PARAMS_ANSWER = /"error":\s*\{\s*"code":\s*-32602\b/;

/**
 * Whether a node's answer is a -32602 refusal. A result in the usual layout is not, known from its first bytes: the
 * pattern scanned every forwarded answer (a block is kilobytes), which cost more than the rest of reading it.
 */
export function refusesParams(text: string): boolean {
  const lead = leadingId(text);
  if (lead && text.startsWith(',"result":', lead.end)) return false;
  return INVALID_PARAMS_ANSWER.test(text);
}

const wsMalformed = (cause: unknown) =>
  new RpcTransportError("the node's answer over WebSocket is not JSON-RPC", "malformed", { cause });

/**
 * One call's answer over a node's calls WebSocket, read (see readNodeAnswer) and handed to the attempt waiting for it
 * in the turn its frame is read: one object per call, where a promise and its reactions took several.
 */
export class WsCallAnswer implements TextSink {
  constructor(
    private readonly request: JsonRpcRequest,
    private readonly raw: boolean,
    private readonly timeoutMs: number,
    /** The node's HTTP URL, for an answer asked again there. */
    private readonly httpUrl: string,
    private readonly sink: ResponseSink,
  ) {}

  answered(text: string, ascii: boolean): void {
    // Node software differs in how its WebSocket refuses a call it cannot read (anvil says -32602 "data did not
    // match any variant of untagged enum EthRpcCall" where its HTTP names the problem or says -32601): such an answer
    // is asked again over HTTP, so a client gets the same error on either transport. HTTP out of reach: the
    // WebSocket's answer is still the node's.
    if (refusesParams(text)) {
      forward(this.httpUrl, this.request, this.timeoutMs, this.raw).then(
        (response) => this.sink.answered(response),
        () => this.read(text, ascii),
      );
      return;
    }
    this.read(text, ascii);
  }

  failed(error: Error): void {
    this.sink.failed(error);
  }

  /** The answer read for the attempt; one that is not JSON-RPC fails it. */
  private read(text: string, ascii: boolean): void {
    let response;
    try {
      response = readNodeAnswer(text, this.request.id ?? null, this.raw, wsMalformed, ascii);
    } catch (error) {
      this.sink.failed(error);
      return;
    }
    this.sink.answered(response);
  }
}
