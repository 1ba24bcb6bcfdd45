import type { JsonRpcRequest, JsonRpcResponse } from "../../rpc/jsonRpc.js";
import { RPC_ERROR } from "../../rpc/jsonRpc.js";
import { filterNotFound } from "../filters/filterStore.js";
import { errorResponse } from "../rpc/parseRequest.js";
import type { FilterCall, FilterReply } from "./messages.js";
import { isFilterReply } from "./messages.js";

/**
 * The primary's part in filter calls between workers: sends each call on to the worker holding the filter and its
 * reply back to the asker. A worker that is gone (died, replaced: its filters went with it), or dies before it
 * answers, gets its callers "filter not found" at once, as an expired filter does: no poll waits on a dead worker.
 */
export class FilterCallRelay {
  private nextId = 1;
  /** Calls sent to an owner and not answered yet, by the id the owner was given. */
  private readonly waiting = new Map<number, { from: number; id: number; owner: number }>();

  /** `send` gives a message to a worker by its cluster id: false when that worker is not there. */
  constructor(private readonly send: (worker: number, message: FilterCall | FilterReply) => boolean) {}

  get pending(): number {
    return this.waiting.size;
  }

  call(from: number, message: FilterCall): void {
    const id = this.nextId++;
    this.waiting.set(id, { from, id: message.id, owner: message.owner });
    if (!this.send(message.owner, { ...message, id })) this.answer(id, filterNotFound(message.request.id));
  }

  reply(message: FilterReply): void {
    this.answer(message.id, message.response);
  }

  /** A worker exited: the calls waiting on it are answered, the calls it was waiting on are forgotten. */
  workerGone(worker: number): void {
    for (const [id, call] of this.waiting)
      if (call.owner === worker) this.answer(id, filterNotFound(null));
      else if (call.from === worker) this.waiting.delete(id);
  }

  private answer(id: number, response: JsonRpcResponse): void {
    const call = this.waiting.get(id);
    if (!call) return;
    this.waiting.delete(id);
    this.send(call.from, { kind: "lightfleet-gateway-filter-reply", id: call.id, response });
  }
}

/**
 * A worker's side: sends a call on another worker's filter through the primary and answers with the owner's reply,
 * under the client's own id. Bounded: without a reply within `timeoutMs` (an owner stuck, a primary gone) the client
 * is told to poll again, never left waiting.
 */
export class ForwardedFilterCalls {
  private nextId = 1;
  private readonly asked = new Map<number, (response: JsonRpcResponse) => void>();

  /** `send` gives a message to the primary: false when it cannot be reached. */
  constructor(
    private readonly send: (message: FilterCall) => boolean,
    private readonly timeoutMs: number,
  ) {}

  forward(owner: number, network: string, request: JsonRpcRequest, client: string): Promise<JsonRpcResponse> {
    const clientId = request.id ?? null;
    const failed = (why: string) =>
      errorResponse(
        clientId,
        RPC_ERROR.INTERNAL_ERROR,
        `the gateway worker holding this filter ${why}; poll again`,
      );
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.asked.delete(id);
        resolve(failed(`did not answer within ${this.timeoutMs / 1000} s`));
      }, this.timeoutMs);
      this.asked.set(id, (response) => {
        clearTimeout(timer);
        resolve({ ...response, id: clientId });
      });
      // An exact-number id would not survive the trip between processes: the client's id is put back on the reply.
      const sent = this.send({
        kind: "lightfleet-gateway-filter-call",
        id,
        owner,
        network,
        client,
        request: { ...request, id: null },
      });
      if (!sent) {
        clearTimeout(timer);
        this.asked.delete(id);
        resolve(failed("cannot be reached"));
      }
    });
  }

  /** A reply from the primary; true when the message was one. One that came after its wait is dropped. */
  receive(message: unknown): boolean {
    if (!isFilterReply(message)) return false;
    const answer = this.asked.get(message.id);
    this.asked.delete(message.id);
    answer?.(message.response);
    return true;
  }
}
