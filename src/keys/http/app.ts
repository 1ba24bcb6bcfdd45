import express from "express";
import type { NextFunction, Request, Response } from "express";
import { z } from "zod";
import type { Logger } from "../../log/logger.js";
import type { KeysMetrics, KeysRoute } from "../../metrics/keysMetrics.js";
import { KeysError } from "../service.js";
import type { KeysService } from "../service.js";
import { KEYS_PAGE } from "../web/page.js";
import { sendProblem } from "./problem.js";

export const SESSION_COOKIE = "lf_session";

export interface KeysAppOptions {
  service: KeysService;
  logger: Logger;
  metrics: KeysMetrics;
  /** Secure cookies (behind TLS). Off only for local http. */
  secureCookies: boolean;
  /** Trust X-Forwarded-For from this many proxies (for per-IP throttling behind an ingress). */
  trustProxy?: number | boolean;
}

const loginBody = z.strictObject({ email: z.email().max(254), password: z.string().min(1).max(1024) });
const twoFactorBody = z.strictObject({ token: z.string().regex(/^\d{6}$/, "must be 6 digits") });
const emptyBody = z.strictObject({});

const CODES: Record<KeysError["code"], { status: number; title: string }> = {
  "invalid-credentials": { status: 401, title: "Invalid credentials" },
  "two-factor-required": { status: 401, title: "Two-factor authentication required" },
  "invalid-two-factor-token": { status: 401, title: "Invalid two-factor code" },
  "session-required": { status: 401, title: "Login required" },
  "key-limit-exceeded": { status: 409, title: "Key pair limit reached" },
  "key-not-found": { status: 404, title: "Key pair not found" },
  throttled: { status: 429, title: "Too many attempts" },
};

function cookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [key, ...value] = part.trim().split("=");
    if (key === name) return value.join("=");
  }
  return undefined;
}

/**
 * The key API under /v1 and its web page at /: Express 5, every failure a problem+json answer with a stable code,
 * no stack trace ever leaves the process.
 */
export function createKeysApp(options: KeysAppOptions): express.Express {
  const { service, logger, metrics } = options;
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", options.trustProxy ?? false);

  const label = (req: Request): KeysRoute => {
    const path = req.path.replace(/\/+$/, "");
    if (req.method === "GET" && (path === "" || path === "/index.html")) return "page";
    if (path === "/v1/user/login") return "login";
    if (path === "/v1/user/login/twofactor") return "twofactor";
    if (path === "/v1/user/logout") return "logout";
    if (path === "/v1/keys") return req.method === "GET" ? "list-keys" : "create-key";
    if (path.startsWith("/v1/keys/") && req.method === "DELETE") return "delete-key";
    return "other";
  };
  app.use((req, res, next) => {
    res.on("finish", () => metrics.requests.inc({ route: label(req), status: String(res.statusCode) }));
    res.setHeader("cache-control", "no-store");
    next();
  });

  const setSession = (res: Response, token: string) =>
    res.cookie(SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: "strict",
      secure: options.secureCookies,
      path: "/",
    });
  const unauthorized = (res: Response, error: KeysError, scheme: "session" | "access-key") => {
    res.setHeader(
      "www-authenticate",
      scheme === "session" ? 'Session realm="lightfleet-keys"' : 'AccessKey realm="lightfleet-keys"',
    );
    sendProblem(res, 401, error.code, CODES[error.code].title, { detail: error.message });
  };

  // State-changing requests from another site are refused (SameSite=Strict cookies are the first line; this is the second).
  app.use((req, res, next) => {
    if (req.method === "GET" || req.method === "HEAD" || req.method === "OPTIONS") return next();
    const site = req.headers["sec-fetch-site"];
    const origin = req.headers.origin;
    const crossSite =
      (site !== undefined && site !== "same-origin" && site !== "none") ||
      (origin !== undefined && origin !== "null" && new URL(origin).host !== req.headers.host);
    if (crossSite) return sendProblem(res, 403, "cross-site-request", "Cross-site request refused");
    next();
  });

  app.use("/v1", (req, res, next) => {
    const length = Number(req.headers["content-length"] ?? 0);
    if ((length > 0 || req.headers["transfer-encoding"]) && !req.is("application/json"))
      return sendProblem(res, 415, "unsupported-media-type", "Request bodies must be application/json");
    next();
  });
  app.use("/v1", express.json({ limit: "16kb", strict: true }));

  const body = <T>(schema: z.ZodType<T>, req: Request, res: Response): T | undefined => {
    const parsed = schema.safeParse(req.body ?? {});
    if (parsed.success) return parsed.data;
    sendProblem(res, 400, "invalid-body", "Invalid request body", {
      errors: parsed.error.issues.map((i) => ({ path: i.path.join(".") || "(body)", message: i.message })),
    });
    return undefined;
  };

  const ip = (req: Request) => req.ip ?? req.socket.remoteAddress ?? "unknown";

  app.post("/v1/user/login", async (req, res) => {
    const input = body(loginBody, req, res);
    if (!input) return;
    const { token, twoFactorRequired } = await service.login(input.email, input.password, ip(req));
    setSession(res, token);
    res.json({ twoFactorRequired });
  });

  app.post("/v1/user/login/twofactor", async (req, res) => {
    const input = body(twoFactorBody, req, res);
    if (!input) return;
    const token = cookie(req, SESSION_COOKIE);
    if (!token) throw new KeysError("session-required", "log in first");
    setSession(res, await service.completeTwoFactor(token, input.token, ip(req)));
    res.json({ twoFactorRequired: false });
  });

  app.post("/v1/user/logout", async (req, res) => {
    const token = cookie(req, SESSION_COOKIE);
    if (token) await service.logout(token);
    res.clearCookie(SESSION_COOKIE, {
      httpOnly: true,
      sameSite: "strict",
      secure: options.secureCookies,
      path: "/",
    });
    res.status(204).end();
  });

  /** The logged-in account of a cookie route; a half-logged-in session owes its second factor. */
  const account = async (req: Request): Promise<number> => {
    const session = await service.session(cookie(req, SESSION_COOKIE));
    if (!session) throw new KeysError("session-required", "log in first");
    if (session.twoFactorPending)
      throw new KeysError("two-factor-required", "complete the two-factor step first");
    return session.userId;
  };

  app.post(["/v1/keys", "/v1/keys/"], async (req, res) => {
    const userId = await account(req);
    if (!body(emptyBody, req, res)) return;
    res.status(201).json(await service.createKey(userId));
  });

  app.get(["/v1/keys", "/v1/keys/"], async (req, res) => {
    const id = req.header("x-access-key-id");
    const secret = req.header("x-secret-key");
    if (!id || !secret)
      throw Object.assign(new KeysError("invalid-credentials", "send x-access-key-id and x-secret-key"), {
        scheme: "access-key",
      });
    try {
      res.json({ keys: await service.listKeys(id, secret) });
    } catch (error) {
      if (error instanceof KeysError) Object.assign(error, { scheme: "access-key" });
      throw error;
    }
  });

  app.delete("/v1/keys/:accessKeyId", async (req, res) => {
    const userId = await account(req);
    await service.deleteKey(userId, String(req.params.accessKeyId));
    res.status(204).end();
  });

  app.get(["/", "/index.html"], (_req, res) => {
    res
      .type("html")
      .setHeader(
        "content-security-policy",
        "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'none'",
      )
      .setHeader("x-frame-options", "DENY")
      .send(KEYS_PAGE);
  });

  app.use((_req, res) => sendProblem(res, 404, "not-found", "Not found"));

  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (error instanceof KeysError) {
      if (CODES[error.code].status === 401)
        return unauthorized(res, error, (error as KeysError & { scheme?: "access-key" }).scheme ?? "session");
      if (error.code === "throttled") res.setHeader("retry-after", String(error.extra.retryAfterSeconds));
      return sendProblem(res, CODES[error.code].status, error.code, CODES[error.code].title, {
        detail: error.message,
        ...error.extra,
      });
    }
    const e = error as { type?: string; status?: number };
    if (e.type === "entity.too.large")
      return sendProblem(res, 413, "body-too-large", "Request body too large");
    if (e.type === "entity.parse.failed")
      return sendProblem(res, 400, "invalid-json", "Request body is not valid JSON");
    if (e.status && e.status >= 400 && e.status < 500)
      return sendProblem(res, e.status, "bad-request", "Bad request");
    logger.error({ err: error, path: req.path, method: req.method }, "key API: unexpected error");
    sendProblem(res, 500, "internal-error", "Internal error");
  });
  return app;
}
