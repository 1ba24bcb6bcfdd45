/**
 * The JSON text of a call to a node, as `JSON.stringify({ jsonrpc: "2.0", id, method, params })` writes it, without
 * its cost where the parameters are the usual few strings (hex quantities, hashes, tags), booleans and numbers: on
 * the Node 20 the image runs, JSON.stringify took its generic path for every call and cost more than the rest of
 * sending it. Anything else (objects, strings that need escaping) goes through JSON.stringify.
 */
export function requestText(id: number, method: string, params: unknown): string {
  if (!plainString(method) || (params !== undefined && !Array.isArray(params)))
    return JSON.stringify({ jsonrpc: "2.0", id, method, params });
  const head = `{"jsonrpc":"2.0","id":${id},"method":"${method}"`;
  if (params === undefined) return `${head}}`;
  const list = paramsText(params as unknown[]);
  return `${head},"params":${list ?? JSON.stringify(params)}}`;
}

/** A flat array of strings that need no escaping, booleans, finite numbers and nulls; undefined for anything else. */
function paramsText(params: unknown[]): string | undefined {
  let text = "[";
  for (let i = 0; i < params.length; i++) {
    const value = params[i];
    if (i > 0) text += ",";
    if (typeof value === "string") {
      if (!plainString(value)) return undefined;
      text += `"${value}"`;
    } else if (typeof value === "boolean") text += value ? "true" : "false";
    else if (value === null) text += "null";
    else if (typeof value === "number" && Number.isFinite(value)) text += String(value);
    else return undefined;
  }
  return `${text}]`;
}

/** Printable ASCII without `"` or `\`: JSON writes it as it is. */
function plainString(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}
