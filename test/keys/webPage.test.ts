import { chromium } from "playwright-core";
import type { Browser } from "playwright-core";
import { generateSync } from "otplib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { findTool } from "../support/requireTool.js";
import { ROOT } from "../support/runCli.js";
import { startTestKeysApi } from "./support.js";

const PASSWORD = "correct horse battery staple";
const chromiumPath = findTool("chromium", "chromium");

describe("key API web page in headless Chromium", () => {
  let started: Awaited<ReturnType<typeof startTestKeysApi>>;
  let browser: Browser;
  let totpSecret: string;

  beforeAll(async () => {
    if (!chromiumPath.path) throw new Error(chromiumPath.missing);
    started = await startTestKeysApi();
    await started.api.service.addUser("page@example.org", PASSWORD);
    totpSecret = (await started.api.service.enableTwoFactor("page@example.org")).secret;
    browser = await chromium.launch({ executablePath: chromiumPath.path, args: ["--no-sandbox"] });
  });
  afterAll(async () => {
    await browser?.close();
    await started?.stop();
  });

  it("logs in with the second factor, creates a pair shown once, lists and deletes it, logs out", async () => {
    const page = await browser.newPage();
    await page.goto(`${started.api.url}/`);
    await page.fill("#email", "page@example.org");
    await page.fill("#password", "wrong password!");
    await page.click("#login-form button");
    await expect.poll(() => page.textContent("#error")).toContain("not correct");

    await page.fill("#password", PASSWORD);
    await page.click("#login-form button");
    await page.waitForSelector("#twofactor:not([hidden])");
    await page.fill("#token", generateSync({ secret: totpSecret }));
    await page.click("#twofactor-form button");
    await page.waitForSelector("#keys:not([hidden])");

    await page.click("#create");
    await page.waitForSelector("#created:not([hidden])");
    const id = await page.textContent("#created-id");
    const secret = await page.textContent("#created-secret");
    expect(id).toMatch(/^LFAK[A-Z2-7]{16}$/);
    expect(secret).toMatch(/^lfsk_/);
    await expect.poll(() => page.locator("#key-rows tr").count()).toBe(1);
    expect(await page.textContent("#key-rows")).toContain(id!);
    // Kept as a test artifact: the page as a user sees it with a new pair (a throwaway test key).
    await page.screenshot({ path: join(ROOT, "test-artifacts", "keys-web-page.png"), fullPage: true });

    // The secret is on the page once; the API never shows it again.
    const rows = await started.api.store.db.selectFrom("key_pairs").selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(secret!);

    await page.click("#key-rows button");
    await expect.poll(() => page.locator("#key-rows tr").count()).toBe(0);
    expect(await started.api.store.db.selectFrom("key_pairs").selectAll().execute()).toHaveLength(0);

    await page.click("#logout");
    await page.waitForSelector("#login:not([hidden])");
    const cookies = await page.context().cookies();
    expect(cookies.find((c) => c.name === "lf_session")).toBeUndefined();
    await page.close();
  });
});
