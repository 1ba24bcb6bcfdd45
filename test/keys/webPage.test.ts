import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium } from "playwright-core";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { generateSync } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findTool } from "../support/requireTool.js";
import { ROOT } from "../support/runCli.js";
import { Client, startTestKeysApi } from "./support.js";

const PASSWORD = "correct horse battery staple";
const chromiumPath = findTool("chromium", "chromium");
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const shot = (name: string) => join(ROOT, "test-artifacts", name);

/** Watches a page for script errors and Content-Security-Policy violations (none are expected). */
function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/status of 40[19]/.test(message.text())) problems.push(message.text());
  });
  return problems;
}

/** axe-core in the page (evaluated through DevTools, so the page's CSP stays as strict as users get it). */
async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  // Strings, not functions: they run in the browser, and this project's TypeScript has no DOM types.
  const violations = await page.evaluate<string[]>(`axe.run(document).then((result) =>
    result.violations.map((v) => v.id + ": " + JSON.stringify(v.nodes.map((n) => n.target))))`);
  return violations;
}

/** Waits with headroom: a login runs scrypt, slow on a loaded machine. */
const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 15_000 });

const focused = (page: Page) => page.evaluate<string>(`document.activeElement?.id ?? ""`);

/** The visible buttons under SELECTOR and the page's scroll width, to check a phone layout. */
const buttonLayout = (page: Page, selector: string) =>
  page.evaluate<{
    scrollWidth: number;
    buttons: Array<{ text: string; width: number; height: number; right: number }>;
  }>(`({
    scrollWidth: document.documentElement.scrollWidth,
    // innerText: the words as shown (the document's line breaks between them collapse).
    buttons: [...document.querySelectorAll(${JSON.stringify(selector)})]
      .filter((b) => b.offsetParent !== null)
      .map((b) => {
        const r = b.getBoundingClientRect();
        return { text: b.innerText, width: r.width, height: r.height, right: r.right };
      }),
  })`);

/** Laid out for a 390 px phone: no horizontal scroll, every button touch-sized (44 px) and inside the screen. */
function expectPhoneLayout(layout: Awaited<ReturnType<typeof buttonLayout>>): void {
  expect(layout.scrollWidth).toBeLessThanOrEqual(390);
  for (const b of layout.buttons) {
    expect(b.height, b.text).toBeGreaterThanOrEqual(44);
    expect(b.width, b.text).toBeGreaterThanOrEqual(44);
    expect(b.right, b.text).toBeLessThanOrEqual(390);
  }
}

describe("key API web page in headless Chromium", () => {
  let started: Awaited<ReturnType<typeof startTestKeysApi>>;
  let browser: Browser;
  let totpSecret: string;

  beforeAll(async () => {
    if (!chromiumPath.path) throw new Error(chromiumPath.missing);
    started = await startTestKeysApi();
    await started.api.service.addUser("page@example.org", PASSWORD);
    await started.api.service.addUser("phone@example.org", PASSWORD);
    totpSecret = (await started.api.service.enableTwoFactor("page@example.org")).secret;
    browser = await chromium.launch({ executablePath: chromiumPath.path, args: ["--no-sandbox"] });
  });
  afterAll(async () => {
    await browser?.close();
    await started?.stop();
  });

  it("serves the page with a strict CSP (no unsafe-inline) and the security headers", async () => {
    const res = await fetch(`${started.api.url}/`);
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("strict-transport-security")).toBeNull();
    const html = await res.text();
    expect(html).not.toMatch(/<script>|<style>|\sstyle=|\son[a-z]+=/);
    // The script is the module in src/keys/web/browser, served as it is there (type-checked, linted, formatted).
    expect(html).toContain('<script type="module" src="/app.js"></script>');
    const script = await fetch(`${started.api.url}/app.js`);
    expect(script.headers.get("content-type")).toMatch(/javascript/);
    expect(await script.text()).toBe(readFileSync(join(ROOT, "src/keys/web/browser/keysPage.js"), "utf8"));
    // So are the document and the style sheet (formatted and checked by Prettier like the rest).
    expect(html).toBe(readFileSync(join(ROOT, "src/keys/web/browser/index.html"), "utf8"));
    const style = await fetch(`${started.api.url}/app.css`);
    expect(style.headers.get("content-type")).toMatch(/text\/css/);
    expect(await style.text()).toBe(readFileSync(join(ROOT, "src/keys/web/browser/keysPage.css"), "utf8"));
    // Behind a TLS-terminating proxy that is trusted, HSTS is sent.
    const tls = await startTestKeysApi({ trustProxy: 1 });
    try {
      const secure = await fetch(`${tls.api.url}/`, { headers: { "x-forwarded-proto": "https" } });
      expect(secure.headers.get("strict-transport-security")).toMatch(/max-age=\d+/);
    } finally {
      await tls.stop();
    }
  });

  it("walks the whole flow at desktop width: 2FA login, reload, name, secret saved step, deactivate, confirmed delete, sessions, password, audit", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: started.api.url });
    const page = await context.newPage();
    const problems = watch(page);
    await page.goto(`${started.api.url}/`);
    await page.waitForSelector("#login:not([hidden])");
    expect(await focused(page)).toBe("login-title");

    await page.fill("#email", "page@example.org");
    await page.fill("#password", "wrong password!");
    await page.click("#login-form button");
    await poll(() => page.textContent("#error")).toContain("not correct");
    await page.fill("#password", PASSWORD);
    await page.click("#login-form button");
    await page.waitForSelector("#twofactor:not([hidden])");
    expect(await focused(page)).toBe("twofactor-title");
    // The prompt offers a way back and help for a lost authenticator: a recovery code in place of the code.
    expect(await page.textContent("#twofactor")).toMatch(/lost your authenticator/i);
    await page.click("#twofactor-use-recovery");
    expect(await page.isVisible("#recovery-code")).toBe(true);
    expect(await page.isHidden("#token")).toBe(true);
    await page.click("#twofactor-use-code");
    await page.click("#twofactor-back");
    await page.waitForSelector("#login:not([hidden])");
    expect(await page.isHidden("#twofactor")).toBe(true);
    await page.fill("#password", PASSWORD);
    await page.click("#login-form button");
    await page.waitForSelector("#twofactor:not([hidden])");
    await page.fill("#token", generateSync({ secret: totpSecret }));
    await page.click("#twofactor-form button");
    await page.waitForSelector("#app:not([hidden])");
    expect(await page.textContent("#who")).toBe("page@example.org");

    // A reload is not a logout.
    await page.reload();
    await page.waitForSelector("#app:not([hidden])");
    expect(await focused(page)).toBe("keys-title");

    await page.fill("#key-name", "indexer");
    await page.click("#create");
    await page.waitForSelector("#created:not([hidden])");
    expect(await focused(page)).toBe("created-title");
    const id = (await page.textContent("#created-id"))!;
    const secret = (await page.textContent("#created-secret"))!;
    expect(id).toMatch(/^LFAK[A-Z2-7]{16}$/);
    expect(secret).toMatch(/^lfsk_/);
    await page.click("#copy-secret");
    expect(await page.evaluate<string>("navigator.clipboard.readText()")).toBe(secret);
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
    expect(readFileSync((await download.path())!, "utf8")).toContain(`${id},${secret}`);
    expect(await page.isDisabled("#done")).toBe(true);
    await page.screenshot({ path: shot("keys-page-desktop-secret.png"), fullPage: true });
    await page.check("#saved");
    await page.click("#done");
    await page.waitForSelector("#created", { state: "hidden" });
    expect(await page.content()).not.toContain(secret);
    expect(
      JSON.stringify(await started.api.store.db.selectFrom("key_pairs").selectAll().execute()),
    ).not.toContain(secret);

    // "Last used" comes only from real use of the key.
    const row = page.locator(`tr[data-id="${id}"]`);
    expect(await row.textContent()).toContain("indexer");
    expect(await row.locator('td[data-label="Last used"]').textContent()).toBe("never");
    const used = await fetch(`${started.api.url}/v1/keys/`, {
      headers: { "x-access-key-id": id, "x-secret-key": secret },
    });
    expect(used.status).toBe(200);
    await page.reload();
    await page.waitForSelector(`tr[data-id="${id}"]`);
    const lastUsed = row.locator('td[data-label="Last used"] time');
    expect(await lastUsed.textContent()).toMatch(/now|second|minute/);
    expect(await lastUsed.getAttribute("title")).toBeTruthy();

    // At the limit the page says what to do rather than offering a button that fails.
    await page.click("#create");
    await page.waitForSelector("#created:not([hidden])");
    await page.check("#saved");
    await page.click("#done");
    await poll(() => page.isDisabled("#create")).toBe(true);
    expect(await page.textContent("#quota")).toContain("2 of 2 keys");
    // At 1280 px with every button showing, no key id wraps.
    expect(
      await page.evaluate<number[]>(
        `[...document.querySelectorAll("#key-rows code")].map((c) => c.getClientRects().length)`,
      ),
    ).toEqual([1, 1]);

    // As the API, an Active pair can be deleted too: the step opens below its row and warns that it is in use.
    await row.getByRole("button", { name: /^Delete/ }).click();
    await page.waitForSelector("#delete-dialog:not([hidden])");
    expect(await page.locator(`tr[data-id="${id}"] + tr.dialog-row #delete-dialog`).count()).toBe(1);
    expect(await page.isVisible("#delete-active")).toBe(true);
    expect(await page.textContent("#delete-dialog")).not.toContain("signed");
    await page.screenshot({ path: shot("keys-page-desktop-delete.png"), fullPage: true });
    await page.click("#delete-cancel");
    await page.waitForSelector("#delete-dialog", { state: "hidden" });

    // Deactivate, then delete with the id typed.
    await row.getByRole("button", { name: /^Deactivate/ }).click();
    await poll(() => row.locator('td[data-label="Status"]').textContent()).toBe("Inactive");
    await row.getByRole("button", { name: /^Delete/ }).click();
    await page.waitForSelector("#delete-dialog:not([hidden])");
    expect(await focused(page)).toBe("delete-title");
    await page.fill("#delete-confirm", "LFAKWRONGWRONGWRONG2");
    expect(await page.isDisabled("#delete-go")).toBe(true);
    await page.fill("#delete-confirm", id);
    await page.click("#delete-go");
    await poll(() => row.count()).toBe(0);
    expect(await started.api.store.db.selectFrom("key_pairs").select("access_key_id").execute()).toHaveLength(
      1,
    );

    // Another session (a second browser) is listed and can be ended from here.
    const other = new Client(started.api.url);
    await other.request("POST", "/v1/user/login", { email: "page@example.org", password: PASSWORD });
    await page.reload();
    await page.waitForSelector("#app:not([hidden])");
    await poll(() => page.locator("#session-list li").count()).toBeGreaterThanOrEqual(2);
    // Browsers by name, not raw user-agent strings.
    expect(await page.textContent("#session-list")).toMatch(/This session: Chrome on Linux/);
    expect(await page.textContent("#session-list")).not.toContain("Mozilla/5.0");
    await page
      .locator("#session-list li")
      .filter({ hasNotText: "This session" })
      .first()
      .getByRole("button")
      .click();
    await poll(() => page.locator("#session-list li").count()).toBe(1);

    // Password change: the old one stops working.
    await page.fill("#pw-current", PASSWORD);
    await page.fill("#pw-new", "a brand new long password");
    await page.click("#password-form button");
    await poll(() => page.textContent("#status")).toContain("password changed");
    expect(
      (
        await new Client(started.api.url).request("POST", "/v1/user/login", {
          email: "page@example.org",
          password: PASSWORD,
        })
      ).status,
    ).toBe(401);

    // Activity in words, not event codes.
    await poll(() => page.textContent("#audit-list")).toContain("Key deleted");
    expect(await page.textContent("#audit-list")).toContain("Password changed");
    expect(await page.textContent("#audit-list")).not.toMatch(/key-deleted|password-changed/);
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: shot("keys-page-desktop.png"), fullPage: true });

    await page.click("#logout");
    await page.waitForSelector("#login:not([hidden])");
    expect((await context.cookies()).find((c) => c.name === "lf_session")).toBeUndefined();
    expect(problems).toEqual([]);
    await context.close();
  });

  it("works on a 390 px phone with the keyboard alone: log in, create, save, set up 2FA with a local QR code", async () => {
    const context: BrowserContext = await browser.newContext({
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
      deviceScaleFactor: 2,
    });
    const page = await context.newPage();
    const problems = watch(page);
    const requests: string[] = [];
    page.on("request", (request) => requests.push(request.url()));
    await page.goto(`${started.api.url}/`);
    await page.waitForSelector("#login:not([hidden])");
    expect(await axeViolations(page)).toEqual([]);

    // Keyboard only: from the focused heading, Tab to each field, Enter to submit.
    await page.keyboard.press("Tab");
    expect(await focused(page)).toBe("email");
    await page.keyboard.type("phone@example.org");
    await page.keyboard.press("Tab");
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#app:not([hidden])");
    expect(await focused(page)).toBe("keys-title");
    await page.keyboard.press("Tab");
    expect(await focused(page)).toBe("key-name");
    await page.keyboard.type("phone app");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#created:not([hidden])");
    expect(await focused(page)).toBe("created-title");
    for (const id of ["copy-id", "copy-secret", "download", "saved"]) {
      await page.keyboard.press("Tab");
      expect(await focused(page)).toBe(id);
    }
    await page.keyboard.press("Space");
    await page.keyboard.press("Tab");
    expect(await focused(page)).toBe("done");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#created", { state: "hidden" });
    expect(await focused(page)).toBe("keys-title");

    // No horizontal scroll; every visible button is at least 44 px each way and inside the screen.
    const layout = await buttonLayout(page, "button");
    expect(layout.buttons.length).toBeGreaterThan(3);
    expectPhoneLayout(layout);

    // Two-factor set-up from the page asks for the password first, and can be cancelled at each step.
    await page.click("#tf-start");
    await page.waitForSelector("#tf-auth:not([hidden])");
    expect(await focused(page)).toBe("tf-auth-password");
    await page.click("#tf-auth-cancel");
    await page.waitForSelector("#tf-auth", { state: "hidden" });
    expect(await focused(page)).toBe("tf-start");
    await page.click("#tf-start");
    await page.fill("#tf-auth-password", "not the password");
    await page.click("#tf-auth-go");
    await poll(() => page.textContent("#error")).toContain("not correct");
    await page.fill("#tf-auth-password", PASSWORD);
    await page.click("#tf-auth-go");
    await page.waitForSelector("#tf-setup:not([hidden])");
    expect(await focused(page)).toBe("tf-setup-title");
    expect(await page.getAttribute("#tf-qr", "src")).toMatch(/^data:image\/svg\+xml;base64,/);
    await poll(() => page.evaluate<number>(`document.getElementById("tf-qr").naturalWidth`)).toBeGreaterThan(
      0,
    );
    const seed = (await page.textContent("#tf-secret"))!;
    await page.fill("#tf-code", "000000");
    await page.click("#tf-confirm-form button");
    await poll(() => page.textContent("#error")).toContain("not valid");
    await page.fill("#tf-code", generateSync({ secret: seed }));
    await page.click("#tf-confirm-form button");
    await poll(() => page.textContent("#tf-state")).toMatch(/^On/);
    // Recovery codes, shown this once, until the owner says they are saved.
    await page.waitForSelector("#tf-recovery:not([hidden])");
    expect(await focused(page)).toBe("tf-recovery-title");
    expect(await page.locator("#tf-recovery-codes li").count()).toBe(10);
    await page.screenshot({ path: shot("keys-page-phone-recovery-codes.png"), fullPage: true });
    await page.click("#tf-recovery-done");
    await page.waitForSelector("#tf-recovery", { state: "hidden" });
    expect(await page.locator("#tf-recovery-codes li").count()).toBe(0);
    expect(
      (await started.api.service.listUsers()).find((u) => u.email === "phone@example.org")!.twoFactor,
    ).toBe(true);
    expect(requests.every((url) => url.startsWith(started.api.url))).toBe(true);

    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: shot("keys-page-phone.png"), fullPage: true });
    expect(problems).toEqual([]);
    await context.close();
  });

  it("turns two-factor off on a 390 px phone with the keyboard alone, after a confirmation step asking for the password and a code", async () => {
    // A clock of its own, moved a 30-second step at a time: each code works once, and no test waits for the next.
    let offset = 0;
    const server = await startTestKeysApi({ clock: () => Date.now() + offset });
    const code = (secret: string) =>
      generateSync({ secret, epoch: Math.floor((Date.now() + offset) / 1000) });
    const context = await browser.newContext({
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
      deviceScaleFactor: 2,
    });
    try {
      await server.api.service.addUser("off@example.org", PASSWORD);
      const seed = (await server.api.service.enableTwoFactor("off@example.org")).secret;
      const page = await context.newPage();
      const problems = watch(page);
      await page.goto(`${server.api.url}/`);
      await page.waitForSelector("#login:not([hidden])");
      await page.fill("#email", "off@example.org");
      await page.fill("#password", PASSWORD);
      await page.keyboard.press("Enter");
      await page.waitForSelector("#twofactor:not([hidden])");
      await page.fill("#token", code(seed));
      await page.keyboard.press("Enter");
      await page.waitForSelector("#app:not([hidden])");
      offset += 30_000;
      // Another browser of the account, to be signed out.
      const other = new Client(server.api.url);
      await other.request("POST", "/v1/user/login", { email: "off@example.org", password: PASSWORD });
      await other.request("POST", "/v1/user/login/twofactor", { token: code(seed) });
      offset += 30_000;

      await poll(() => page.textContent("#tf-state")).toMatch(/^On/);
      expect(await page.isHidden("#tf-off")).toBe(true);

      // The control opens a confirmation step; Cancel closes it and gives focus back.
      await page.focus("#tf-off-start");
      await page.keyboard.press("Enter");
      await page.waitForSelector("#tf-off:not([hidden])");
      expect(await focused(page)).toBe("tf-off-title");
      await page.keyboard.press("Tab");
      expect(await focused(page)).toBe("tf-off-password");
      await page.keyboard.press("Tab");
      expect(await focused(page)).toBe("tf-off-code");
      await page.keyboard.press("Tab");
      expect(await focused(page)).toBe("tf-off-go");
      await page.keyboard.press("Tab");
      expect(await focused(page)).toBe("tf-off-cancel");
      await page.keyboard.press("Enter");
      await page.waitForSelector("#tf-off", { state: "hidden" });
      expect(await focused(page)).toBe("tf-off-start");
      // Escape closes it as well, and what was typed goes with it.
      await page.keyboard.press("Enter");
      await page.waitForSelector("#tf-off:not([hidden])");
      await page.keyboard.press("Tab");
      await page.keyboard.type("typed then abandoned");
      await page.keyboard.press("Escape");
      await page.waitForSelector("#tf-off", { state: "hidden" });
      expect(await focused(page)).toBe("tf-off-start");
      expect(await page.inputValue("#tf-off-password")).toBe("");

      await page.keyboard.press("Enter");
      await page.waitForSelector("#tf-off:not([hidden])");
      // Laid out for the phone: no horizontal scroll, touch-sized buttons inside the screen.
      const layout = await buttonLayout(page, "#security button");
      expect(layout.buttons.map((b) => b.text)).toEqual(
        expect.arrayContaining(["Turn off two-factor", "Turn off two-factor authentication", "Cancel"]),
      );
      expectPhoneLayout(layout);
      expect(await axeViolations(page)).toEqual([]);
      await page.locator("#tf-off").screenshot({ path: shot("keys-page-phone-2fa-off-confirm.png") });

      // A wrong password is refused with the server's detail; two-factor stays on.
      await page.keyboard.press("Tab");
      await page.keyboard.type("not my password");
      await page.keyboard.press("Tab");
      await page.keyboard.type(code(seed));
      await page.keyboard.press("Enter");
      // Said next to the form, with focus on the field to fix.
      await poll(() => page.textContent("#tf-off-error")).toContain("password is not correct");
      expect(await focused(page)).toBe("tf-off-password");
      expect(await page.isVisible("#tf-off")).toBe(true);
      expect(await page.textContent("#tf-state")).toMatch(/^On/);

      await page.fill("#tf-off-password", PASSWORD);
      await page.fill("#tf-off-code", code(seed));
      await page.focus("#tf-off-code");
      await page.keyboard.press("Enter");
      await poll(() => page.textContent("#tf-state")).toMatch(/^Off/);
      expect(await page.isHidden("#tf-off")).toBe(true);
      expect(await page.isVisible("#tf-start")).toBe(true);
      expect(await page.isHidden("#tf-off-start")).toBe(true);
      await poll(() => focused(page)).toBe("security-title");
      expect(await page.textContent("#status")).toContain("two-factor authentication is off");
      expect(await page.inputValue("#tf-off-password")).toBe("");
      await poll(() => page.textContent("#audit-list")).toContain("Two-factor authentication turned off");
      await poll(() => page.locator("#session-list li").count()).toBe(1);
      expect((await other.request("GET", "/v1/user/me")).status).toBe(401);
      expect(
        (await server.api.service.listUsers()).find((u) => u.email === "off@example.org")!.twoFactor,
      ).toBe(false);

      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: shot("keys-page-phone-2fa-off.png"), fullPage: true });
      expect(problems).toEqual([]);
    } finally {
      await context.close();
      await server.stop();
    }
  });

  it("shows each key's age and asks to rotate a key older than 90 days, at 1280 and 390 px", async () => {
    // A clock of its own: one key made 100 days ago, one 10 days ago; the browser reads their age on today's clock.
    const day = 86_400_000;
    let offset = -100 * day;
    const server = await startTestKeysApi({ clock: () => Date.now() + offset });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      await server.api.service.addUser("aging@example.org", PASSWORD);
      const { token } = await server.api.service.login("aging@example.org", PASSWORD, "127.0.0.1");
      const { userId } = (await server.api.service.session(token))!;
      const old = await server.api.service.createKey(userId, undefined, "indexer");
      offset = -10 * day;
      const recent = await server.api.service.createKey(userId, undefined, "backup");
      offset = 0;
      const page = await context.newPage();
      const problems = watch(page);
      await page.goto(`${server.api.url}/`);
      await page.waitForSelector("#login:not([hidden])");
      await page.fill("#email", "aging@example.org");
      await page.fill("#password", PASSWORD);
      await page.keyboard.press("Enter");
      await page.waitForSelector("#app:not([hidden])");
      const age = (id: string) => page.locator(`tr[data-id="${id}"] td[data-label="Age"]`).innerText();
      expect(await age(old.accessKeyId)).toMatch(/^100 days\s*Rotate$/);
      expect(await age(recent.accessKeyId)).toBe("10 days");
      const reminder = page.locator("#rotate-reminder");
      expect(await reminder.isVisible()).toBe(true);
      const text = await reminder.innerText();
      expect(text).toContain(old.accessKeyId);
      expect(text).not.toContain(recent.accessKeyId);
      expect(text).toMatch(/older than 90 days/);
      // Both of the two slots are taken: the steps start with freeing one.
      expect(text).toMatch(/delete a key you no longer use/);
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: shot("keys-page-desktop-key-age.png"), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await reminder.isVisible()).toBe(true);
      await page.screenshot({ path: shot("keys-page-phone-key-age.png"), fullPage: true });
      // Once the old key is gone, so is the reminder.
      await server.api.service.deleteKey(userId, old.accessKeyId);
      await page.reload();
      await page.waitForSelector("#app:not([hidden])");
      expect(await page.locator("#rotate-reminder").isVisible()).toBe(false);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
      await server.stop();
    }
  });
});
