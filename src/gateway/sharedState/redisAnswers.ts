import { createHash } from "node:crypto";
import type { AnswerBlock } from "../rpc/responseCache.js";
import type { SharedStore } from "./sharedStore.js";

/** An answer about a final block as the replicas share it: its result (JSON text) and the block it belongs to. */
export interface SharedAnswer {
  json: string;
  block: AnswerBlock;
}

/**
 * The response cache's tier shared by every replica: answers about final blocks only (they never change). A replica
 * that reads one checks its block against its own nodes' chain before serving it, as it checks its own entries.
 */
export interface SharedAnswers {
  /** The answer kept under `key`, or undefined (none, unreadable, or the store is away: never throws). */
  get(key: string): Promise<SharedAnswer | undefined>;
  /** Keeps an answer, in the background: a failure only means the next replica asks a node. */
  put(key: string, answer: SharedAnswer): void;
}

/**
 * Shared answers in Redis, one string per answer: its block's height and hash on the first line, the result after.
 * Keys are hashed (a call's parameters can be long), per network, and expire after `ttlMs` to bound Redis memory.
 */
export class RedisAnswers implements SharedAnswers {
  constructor(private readonly options: { store: SharedStore; network: string; ttlMs: number }) {}

  async get(key: string): Promise<SharedAnswer | undefined> {
    try {
      const text = await this.options.store.run("cache", (redis) => redis.get(this.redisKey(key)));
      return text === null ? undefined : decodeSharedAnswer(text);
    } catch {
      // Timed out or away (counted and logged by the store): the call goes to a node.
      return undefined;
    }
  }

  put(key: string, answer: SharedAnswer): void {
    this.options.store
      .run("cache", (redis) =>
        redis.set(this.redisKey(key), encodeSharedAnswer(answer), "PX", this.options.ttlMs),
      )
      .catch(() => undefined);
  }

  private redisKey(key: string): string {
    return `cache:${this.options.network}:${createHash("sha256").update(key).digest("base64url")}`;
  }
}

const FIRST_LINE = /^(\d{0,15}) (0x[0-9a-f]{64})?\n/;

/** "<height> <hash>\n<result>", either of height and hash may be empty. Pure. */
export function encodeSharedAnswer({ json, block }: SharedAnswer): string {
  return `${block.number ?? ""} ${block.hash ?? ""}\n${json}`;
}

/** The answer in `text`, or undefined when it is not one (written by something else): never served then. Pure. */
export function decodeSharedAnswer(text: string): SharedAnswer | undefined {
  const line = FIRST_LINE.exec(text);
  if (!line || (line[1] === "" && line[2] === undefined)) return undefined;
  const json = text.slice(line[0].length);
  if (json.length === 0) return undefined;
  return {
    json,
    block: {
      ...(line[1] === "" ? {} : { number: Number(line[1]) }),
      ...(line[2] === undefined ? {} : { hash: line[2] }),
    },
  };
}
