import fastJsonPatch from "fast-json-patch";
import type { Operation } from "fast-json-patch";
import { ApiError } from "./apiStatus.js";

export type PatchKind = "merge" | "strategic" | "json";

const MEDIA_TYPES: Record<string, PatchKind> = {
  "application/merge-patch+json": "merge",
  "application/strategic-merge-patch+json": "strategic",
  "application/json-patch+json": "json",
};
const RFC_6902_OPS = new Set(["add", "remove", "replace", "move", "copy", "test"]);

/**
 * The patch a request's Content-Type names, or 415 as the API server answers: a custom resource takes JSON and merge
 * patches only (strategic merge needs the Go types' merge keys, which a CRD does not have).
 */
export function patchKind(contentType: string | undefined, customResource: boolean): PatchKind {
  const kind = MEDIA_TYPES[(contentType ?? "").split(";")[0]!.trim()];
  const accepted = customResource ? ["json", "merge"] : ["json", "merge", "strategic"];
  if (!kind || !accepted.includes(kind))
    throw new ApiError(
      415,
      "UnsupportedMediaType",
      `the body of the request was in an unknown format - accepted media types include: ${Object.entries(
        MEDIA_TYPES,
      )
        .filter(([, k]) => accepted.includes(k))
        .map(([type]) => type)
        .join(", ")}`,
    );
  return kind;
}

/** The object after a patch; a body that is not a patch of its kind is 400, a JSON Patch that cannot apply 422. */
export function applyPatch(kind: PatchKind, current: object, body: unknown): Record<string, unknown> {
  if (kind === "json") {
    if (!Array.isArray(body))
      throw new ApiError(
        400,
        "BadRequest",
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
      );
    try {
      for (const op of body as Array<{ op?: unknown }>)
        if (typeof op !== "object" || op === null || !RFC_6902_OPS.has(op.op as string))
          throw new Error(`Unexpected kind: ${String((op as { op?: unknown } | null)?.op)}`);
      const patched = fastJsonPatch.applyPatch(structuredClone(current), body as Operation[], true, false)
        .newDocument as unknown;
      if (typeof patched !== "object" || patched === null || Array.isArray(patched))
        throw new Error("the patched document is not an object");
      return patched as Record<string, unknown>;
    } catch (error) {
      throw new ApiError(422, "Invalid", (error as Error).message.split("\n")[0]!);
    }
  }
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new ApiError(400, "BadRequest", "a merge patch must be a JSON object");
  return mergePatch(current, body, kind === "strategic") as Record<string, unknown>;
}

/**
 * RFC 7386 merge patch; with `strategic`, lists of objects with a `type` (conditions) merge by it, as pod conditions
 * do (their patchMergeKey). Other strategic directives ($patch, $retainKeys, lists merged by name) are not modelled.
 */
function mergePatch(target: unknown, body: unknown, strategic: boolean): unknown {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    if (strategic && Array.isArray(body) && Array.isArray(target) && body.every((i) => isTyped(i))) {
      const merged = [...(target as Array<{ type: string }>)];
      for (const item of body as Array<{ type: string }>) {
        const at = merged.findIndex((t) => t.type === item.type);
        if (at >= 0) merged[at] = { ...merged[at]!, ...item };
        else merged.push(item);
      }
      return merged;
    }
    return structuredClone(body);
  }
  const out: Record<string, unknown> =
    typeof target === "object" && target !== null && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [k, v] of Object.entries(body)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v, strategic);
  }
  return out;
}

function isTyped(item: unknown): boolean {
  return typeof item === "object" && item !== null && typeof (item as { type?: unknown }).type === "string";
}
