import type { IncomingMessage, ServerResponse } from "node:http";
import type { Answer, AnswerSink } from "../pipeline/answer.js";
import { sendAnswer } from "./sendAnswer.js";

/**
 * Where a request's answer goes when it comes after the request was handled (a node's answer): written as it comes,
 * in the turn the node's answer is read. A failure writing it goes to `failed` (a 500, or the connection dropped),
 * never out to the node's connection that delivered the answer.
 */
export class HttpAnswer implements AnswerSink {
  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly onFailure: (res: ServerResponse, error: unknown) => void,
  ) {}

  answered(answer: Answer): void {
    try {
      sendAnswer(this.req, this.res, answer);
    } catch (error) {
      this.onFailure(this.res, error);
    }
  }

  failed(error: unknown): void {
    this.onFailure(this.res, error);
  }
}
