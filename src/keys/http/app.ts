import express from "express";
import type { NextFunction, Request, Response } from "express";
import QRCode from "qrcode";
import { z } from "zod";
import type { Logger } from "../../log/logger.js";
import type { KeysMetrics, KeysRoute } from "../../metrics/keysMetrics.js";
import { KeysError, MIN_PASSWORD_LENGTH } from "../service.js";
import type { KeysService } from "../service.js";
import { PAGE_ASSETS } from "../web/page.js";
import { sendProblem } from "./problem.js";
import { crossSiteReason } from "./sameOrigin.js";

export const SESSION_COOKIE = "lf_session";
/** Marks a browser that logged in to an account before (see crypto/deviceCookie.ts). */
export const DEVICE_COOKIE = "lf_device";

export interface KeysAppOptions {
  service: KeysService;
  logger: Logger;
  metrics: KeysMetrics;
  /** Secure cookies (behind TLS). Off only for local http. */
  secureCookies: boolean;
  /** Trust X-Forwarded-For from this many proxies: the client address is the one the last of them appended. */
  trustProxy?: number;
  /** Served over TLS directly (HSTS is sent; behind a trusted proxy, X-Forwarded-Proto https says the same). */
  tls?: boolean;
}

/** Names are text: no control characters (PostgreSQL cannot store a NUL, and none belongs in a label). */
const keyName = z
  .string()
  .trim()
  .min(1)
  .max(64)
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  .regex(/^[^\u0000-\u001f\u007f]*$/, "must not contain control characters");
const totpCode = z.string().regex(/^\d{6}$/, "must be 6 digits");
/** A current code may come with the password: both factors at once (the way in while the account is slowed down). */
const loginBody = z.strictObject({
  email: z.email().max(254),
  password: z.string().min(1).max(1024),
  token: totpCode.optional(),
});
const twoFactorBody = z.strictObject({ token: totpCode });
/** The second step of a login: a code from the authenticator, or one of the recovery codes when it is lost. */
const secondFactorBody = z.union([
  twoFactorBody,
  z.strictObject({ recoveryCode: z.string().regex(/^[a-zA-Z2-7\s-]{10,20}$/, "must be a recovery code") }),
]);
/** Set-up starts with the password again (a session alone does not change the account's security). */
const setupBody = z.strictObject({ currentPassword: z.string().min(1).max(1024) });
const createBody = z.strictObject({ name: keyName.optional() });
const updateBody = z
  .strictObject({ name: keyName.nullable().optional(), status: z.enum(["Active", "Inactive"]).optional() })
  .refine((b) => b.name !== undefined || b.status !== undefined, "give a name or a status");
const passwordBody = z.strictObject({
  currentPassword: z.string().min(1).max(1024),
  newPassword: z
    .string()
    .min(MIN_PASSWORD_LENGTH, `must be at least ${MIN_PASSWORD_LENGTH} characters`)
    .max(1024),
});
/** Turning the second factor off asks for both factors again. */
const twoFactorOffBody = z.strictObject({
  currentPassword: z.string().min(1).max(1024),
  token: twoFactorBody.shape.token,
});

const CODES: Record<KeysError["code"], { status: number; title: string }> = {
  "invalid-credentials": { status: 401, title: "Invalid credentials" },
  "two-factor-required": { status: 401, title: "Two-factor authentication required" },
  "invalid-two-factor-token": { status: 401, title: "Invalid two-factor code" },
  "session-required": { status: 401, title: "Login required" },
  "key-limit-exceeded": { status: 409, title: "Key pair limit reached" },
  "key-not-found": { status: 404, title: "Key pair not found" },
  "session-not-found": { status: 404, title: "Session not found" },
  "two-factor-already-enabled": { status: 409, title: "Two-factor authentication is on already" },
  "two-factor-setup-required": { status: 409, title: "Two-factor set-up not started" },
  "two-factor-not-enabled": { status: 409, title: "Two-factor authentication is not on" },
  throttled: { status: 429, title: "Too many attempts" },
};

/** The routes and their methods: any other method on them is a 405 with Allow. */
const ROUTES: Array<[string[], string]> = [
  [["/v1/user/login"], "POST"],
  [["/v1/user/login/twofactor"], "POST"],
  [["/v1/user/logout"], "POST"],
  [["/v1/user/me"], "GET"],
  [["/v1/user/keys", "/v1/user/keys/"], "GET"],
  [["/v1/user/sessions", "/v1/user/sessions/"], "GET"],
  [["/v1/user/sessions/:id"], "DELETE"],
  [["/v1/user/audit"], "GET"],
  [["/v1/user/password"], "POST"],
  [["/v1/user/twofactor/setup"], "POST"],
  [["/v1/user/twofactor/confirm"], "POST"],
  [["/v1/user/twofactor/disable"], "POST"],
  [["/v1/keys", "/v1/keys/"], "GET, POST"],
  [["/v1/keys/:accessKeyId"], "PATCH, DELETE"],
];

/**
 * Content-Security-Policy of every answer: the page is a document, a script and a style sheet from this origin, with
 * no inline code at all; QR codes are data: images made here.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

function cookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [key, ...value] = part.trim().split("=");
    if (key === name) return value.join("=");
  }
  return undefined;
}

/**
 * The key API under /v1 and its web page at /: Express 5, every failure a problem+json answer with a stable code
 * and a detail, no stack trace ever leaves the process.
 */
export function createKeysApp(options: KeysAppOptions): express.Express {
  const { service, logger, metrics } = options;
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", options.trustProxy ?? 0);

  const label = (req: Request): KeysRoute => {
    const path = req.path.replace(/\/+$/, "");
    if (req.method === "GET" && (path === "" || path === "/index.html" || path in PAGE_ASSETS)) return "page";
    if (path === "/v1/user/login") return "login";
    if (path === "/v1/user/login/twofactor") return "twofactor";
    if (path === "/v1/user/logout") return "logout";
    if (path === "/v1/keys") return req.method === "GET" ? "list-keys" : "create-key";
    if (path.startsWith("/v1/keys/") && req.method === "DELETE") return "delete-key";
    if (path.startsWith("/v1/keys/") && req.method === "PATCH") return "update-key";
    if (path.startsWith("/v1/user/")) return "account";
    return "other";
  };
  app.use((req, res, next) => {
    res.on("finish", () => metrics.requests.inc({ route: label(req), status: String(res.statusCode) }));
    res.setHeader("cache-control", "no-store");
    res.setHeader("content-security-policy", CONTENT_SECURITY_POLICY);
    res.setHeader("x-content-type-options", "nosniff");
    res.setHeader("referrer-policy", "no-referrer");
    res.setHeader("x-frame-options", "DENY");
    res.setHeader("cross-origin-opener-policy", "same-origin");
    res.setHeader("permissions-policy", "camera=(), microphone=(), geolocation=()");
    if (options.tls || req.secure) res.setHeader("strict-transport-security", "max-age=31536000");
    next();
  });

  const cookieOptions = {
    httpOnly: true,
    sameSite: "strict",
    secure: options.secureCookies,
    path: "/",
  } as const;
  const setSession = (res: Response, token: string) => res.cookie(SESSION_COOKIE, token, cookieOptions);
  /** Set after a complete login only (both factors when the account has two). */
  const setDevice = (res: Response, deviceToken: string | undefined) => {
    if (deviceToken) res.cookie(DEVICE_COOKIE, deviceToken, { ...cookieOptions, maxAge: 365 * 86_400_000 });
  };
  const unauthorized = (res: Response, error: KeysError, scheme: "session" | "access-key") => {
    res.setHeader(
      "www-authenticate",
      scheme === "session" ? 'Session realm="lightfleet-keys"' : 'AccessKey realm="lightfleet-keys"',
    );
    sendProblem(res, 401, error.code, CODES[error.code].title, error.message);
  };
  const ip = (req: Request) => req.ip ?? req.socket.remoteAddress ?? "unknown";

  app.use(async (req, res, next) => {
    const reason = crossSiteReason({
      method: req.method,
      secFetchSite: req.headers["sec-fetch-site"],
      origin: req.headers.origin,
      host: req.headers.host,
      protocol: req.protocol,
    });
    if (!reason) return next();
    await service.record(
      "cross-site-refused",
      `ip ${ip(req)}, ${req.method} ${req.path.slice(0, 64)}, ${reason}`,
    );
    sendProblem(
      res,
      403,
      "cross-site-request",
      "Cross-site request refused",
      `state-changing requests must come from this site (${reason})`,
    );
  });

  app.use("/v1", (req, res, next) => {
    const length = Number(req.headers["content-length"] ?? 0);
    if ((length > 0 || req.headers["transfer-encoding"]) && !req.is("application/json"))
      return sendProblem(
        res,
        415,
        "unsupported-media-type",
        "Unsupported media type",
        "request bodies must be application/json",
      );
    next();
  });
  app.use("/v1", express.json({ limit: "16kb", strict: true }));

  const body = <T>(schema: z.ZodType<T>, req: Request, res: Response): T | undefined => {
    const parsed = schema.safeParse(req.body ?? {});
    if (parsed.success) return parsed.data;
    const errors = parsed.error.issues.map((i) => ({
      path: i.path.join(".") || "(body)",
      message: i.message,
    }));
    sendProblem(
      res,
      400,
      "invalid-body",
      "Invalid request body",
      errors.map((e) => `${e.path}: ${e.message}`).join("; "),
      { errors },
    );
    return undefined;
  };

  app.post("/v1/user/login", async (req, res) => {
    const input = body(loginBody, req, res);
    if (!input) return;
    const { token, twoFactorRequired, deviceToken } = await service.login(
      input.email,
      input.password,
      ip(req),
      {
        deviceToken: cookie(req, DEVICE_COOKIE),
        userAgent: req.header("user-agent"),
        code: input.token,
      },
    );
    setSession(res, token);
    setDevice(res, deviceToken);
    res.json({ twoFactorRequired });
  });

  app.post("/v1/user/login/twofactor", async (req, res) => {
    const input = body(secondFactorBody, req, res);
    if (!input) return;
    const token = cookie(req, SESSION_COOKIE);
    if (!token) throw new KeysError("session-required", "log in first");
    const done = await service.completeTwoFactor(
      token,
      "token" in input ? { code: input.token } : { recoveryCode: input.recoveryCode },
      ip(req),
      req.header("user-agent"),
      cookie(req, DEVICE_COOKIE),
    );
    setSession(res, done.token);
    setDevice(res, done.deviceToken);
    res.json({ twoFactorRequired: false });
  });

  app.post("/v1/user/logout", async (req, res) => {
    const token = cookie(req, SESSION_COOKIE);
    if (token) await service.logout(token, ip(req));
    res.clearCookie(SESSION_COOKIE, cookieOptions);
    res.status(204).end();
  });

  /** The session of a cookie route; a half-logged-in session owes its second factor. */
  const session = async (req: Request, allowPending = false) => {
    const found = await service.session(cookie(req, SESSION_COOKIE));
    if (!found) throw new KeysError("session-required", "log in first");
    if (found.twoFactorPending && !allowPending)
      throw new KeysError("two-factor-required", "complete the two-factor step first");
    return found;
  };
  const account = async (req: Request) => (await session(req)).userId;

  // --- the account, for the page (session-authenticated) ---

  app.get("/v1/user/me", async (req, res) => {
    const found = await session(req, true);
    res.json({ ...(await service.me(found.userId)), twoFactorPending: found.twoFactorPending });
  });
  app.get(["/v1/user/keys", "/v1/user/keys/"], async (req, res) => {
    res.json({ keys: await service.listOwnKeys(await account(req)) });
  });
  app.get(["/v1/user/sessions", "/v1/user/sessions/"], async (req, res) => {
    const found = await session(req);
    res.json({ sessions: await service.listSessions(found.userId, found.id) });
  });
  app.delete("/v1/user/sessions/:id", async (req, res) => {
    await service.revokeSession(await account(req), String(req.params.id).slice(0, 64), { ip: ip(req) });
    res.status(204).end();
  });
  app.get("/v1/user/audit", async (req, res) => {
    res.json({ entries: await service.accountAudit(await account(req)) });
  });
  app.post("/v1/user/password", async (req, res) => {
    const userId = await account(req);
    const input = body(passwordBody, req, res);
    if (!input) return;
    await service.changePassword(
      userId,
      input.currentPassword,
      input.newPassword,
      cookie(req, SESSION_COOKIE)!,
      {
        ip: ip(req),
      },
    );
    res.status(204).end();
  });
  app.post("/v1/user/twofactor/setup", async (req, res) => {
    const userId = await account(req);
    const input = body(setupBody, req, res);
    if (!input) return;
    const { secret, uri } = await service.startTwoFactorSetup(userId, input.currentPassword, { ip: ip(req) });
    // The QR code is drawn here: the seed never goes to a third-party image service.
    const qrSvg = await QRCode.toString(uri, { type: "svg", margin: 2, errorCorrectionLevel: "M" });
    res.json({ secret, uri, qrSvg });
  });
  app.post("/v1/user/twofactor/confirm", async (req, res) => {
    const userId = await account(req);
    const input = body(twoFactorBody, req, res);
    if (!input) return;
    res.json(
      await service.confirmTwoFactorSetup(userId, input.token, cookie(req, SESSION_COOKIE)!, { ip: ip(req) }),
    );
  });

  app.post("/v1/user/twofactor/disable", async (req, res) => {
    const userId = await account(req);
    const input = body(twoFactorOffBody, req, res);
    if (!input) return;
    await service.turnOffTwoFactor(userId, input.currentPassword, input.token, cookie(req, SESSION_COOKIE)!, {
      ip: ip(req),
    });
    res.status(204).end();
  });

  // --- key pairs ---

  app.post(["/v1/keys", "/v1/keys/"], async (req, res) => {
    const userId = await account(req);
    const input = body(createBody, req, res);
    if (!input) return;
    res.status(201).json(await service.createKey(userId, { ip: ip(req) }, input.name));
  });

  app.get(["/v1/keys", "/v1/keys/"], async (req, res) => {
    const id = req.header("x-access-key-id");
    const secret = req.header("x-secret-key");
    if (!id || !secret)
      throw Object.assign(new KeysError("invalid-credentials", "send x-access-key-id and x-secret-key"), {
        scheme: "access-key",
      });
    try {
      res.json({ keys: await service.listKeys(id, secret, ip(req)) });
    } catch (error) {
      if (error instanceof KeysError) Object.assign(error, { scheme: "access-key" });
      throw error;
    }
  });

  app.patch("/v1/keys/:accessKeyId", async (req, res) => {
    const userId = await account(req);
    const input = body(updateBody, req, res);
    if (!input) return;
    res.json(await service.updateKey(userId, String(req.params.accessKeyId), input, { ip: ip(req) }));
  });

  app.delete("/v1/keys/:accessKeyId", async (req, res) => {
    const userId = await account(req);
    await service.deleteKey(userId, String(req.params.accessKeyId), { ip: ip(req) });
    res.status(204).end();
  });

  for (const [paths, allow] of ROUTES)
    app.all(paths, (req, res, next) => {
      // Express answers HEAD with the GET route.
      if (allow.split(", ").includes(req.method) || (req.method === "HEAD" && allow.includes("GET")))
        return next();
      res.setHeader("allow", allow);
      sendProblem(
        res,
        405,
        "method-not-allowed",
        "Method not allowed",
        `${req.method} is not allowed here; use ${allow}`,
      );
    });

  // --- the page: a document, a script, a style sheet ---

  app.get(["/", "/index.html"], (_req, res) => {
    res.type("html").send(PAGE_ASSETS["/index.html"]!.body);
  });
  app.get(Object.keys(PAGE_ASSETS), (req, res) => {
    const asset = PAGE_ASSETS[req.path]!;
    res.type(asset.type).send(asset.body);
  });

  app.use((req, res) =>
    sendProblem(res, 404, "not-found", "Not found", `nothing is served at ${req.path.slice(0, 64)}`),
  );

  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (error instanceof KeysError) {
      if (CODES[error.code].status === 401)
        return unauthorized(res, error, (error as KeysError & { scheme?: "access-key" }).scheme ?? "session");
      if (error.code === "throttled") res.setHeader("retry-after", String(error.extra.retryAfterSeconds));
      return sendProblem(
        res,
        CODES[error.code].status,
        error.code,
        CODES[error.code].title,
        error.message,
        error.extra,
      );
    }
    const e = error as { type?: string; status?: number };
    if (e.type === "entity.too.large")
      return sendProblem(
        res,
        413,
        "body-too-large",
        "Request body too large",
        "request bodies are at most 16 KiB",
      );
    if (e.type === "entity.parse.failed")
      return sendProblem(
        res,
        400,
        "invalid-json",
        "Request body is not valid JSON",
        "the body could not be parsed as JSON",
      );
    // Last resort for input the database refuses (a NUL byte, an invalid encoding): the client's fault, not ours.
    if ((error as { code?: unknown }).code === "22021" || (error as { code?: unknown }).code === "22P05")
      return sendProblem(
        res,
        400,
        "bad-request",
        "Bad request",
        "the request holds characters that cannot be stored",
      );
    // The body parser's refusals of a charset or content-encoding it cannot read.
    if (e.status === 415)
      return sendProblem(
        res,
        415,
        "unsupported-media-type",
        "Unsupported media type",
        "request bodies must be application/json in UTF-8, without a content-encoding other than gzip, deflate or br",
      );
    if (e.status && e.status >= 400 && e.status < 500)
      return sendProblem(res, e.status, "bad-request", "Bad request", "the request could not be understood");
    logger.error(
      { err: error, path: req.path.slice(0, 64), method: req.method },
      "key API: unexpected error",
    );
    sendProblem(res, 500, "internal-error", "Internal error", "the server failed; the error is logged");
  });
  return app;
}
