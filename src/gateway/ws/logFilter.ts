/** A `logs` subscription filter (eth_subscribe("logs", {address, topics})). */
export interface LogFilter {
  address?: string[];
  topics?: (string[] | null)[];
}

export interface Log {
  address: string;
  topics: string[];
  [key: string]: unknown;
}

const HEX = /^0x[0-9a-f]*$/i;

/** Parses and checks a logs filter; a string error names what is wrong. */
export function parseLogFilter(value: unknown): LogFilter | string {
  if (value === undefined) return {};
  if (!value || typeof value !== "object" || Array.isArray(value)) return "the logs filter must be an object";
  const v = value as { address?: unknown; topics?: unknown };
  const filter: LogFilter = {};
  if (v.address !== undefined && v.address !== null) {
    const list = Array.isArray(v.address) ? v.address : [v.address];
    if (!list.every((a) => typeof a === "string" && HEX.test(a) && a.length === 42))
      return "address must be an address or a list of addresses";
    filter.address = list.map((a) => (a as string).toLowerCase());
  }
  if (v.topics !== undefined && v.topics !== null) {
    if (!Array.isArray(v.topics) || v.topics.length > 4)
      return "topics must be a list of at most 4 positions";
    const topics: (string[] | null)[] = [];
    for (const position of v.topics as unknown[]) {
      if (position === null) topics.push(null);
      else {
        const list = Array.isArray(position) ? position : [position];
        if (!list.every((t) => typeof t === "string" && HEX.test(t) && t.length === 66))
          return "each topic must be a 32-byte hex string, a list of them, or null";
        topics.push(list.map((t) => (t as string).toLowerCase()));
      }
    }
    filter.topics = topics;
  }
  return filter;
}

export function matchesFilter(log: Log, filter: LogFilter): boolean {
  if (filter.address && !filter.address.includes(log.address.toLowerCase())) return false;
  if (filter.topics) {
    for (let i = 0; i < filter.topics.length; i++) {
      const wanted = filter.topics[i];
      if (!wanted || wanted.length === 0) continue;
      const topic = log.topics[i]?.toLowerCase();
      if (topic === undefined || !wanted.includes(topic)) return false;
    }
  }
  return true;
}
