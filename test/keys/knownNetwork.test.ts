import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSync } from "otplib";
import { afterAll, describe, expect, it } from "vitest";
import { Accounts } from "../../src/keys/service/accounts.js";
import { accountKey, KeysContext } from "../../src/keys/service/context.js";
import { Sessions } from "../../src/keys/service/sessions.js";
import { NEWEST_FIRST_AFTER_NETWORKS } from "../../src/keys/throttle/hashingGate.js";
import { openKeyStore } from "../../src/keys/store/database.js";
import { waitFor } from "../support/waitFor.js";
import { PEPPER, SEED_KEY, startPostgres } from "./support.js";

const PASSWORD = "correct horse battery staple";
const GUESSES = 6;

/**
 * The owner on a browser that never logged in (no device cookie) but on a network the account completed a login from
 * before, or with a current second-factor code, is served ahead of a botnet's guesses waiting on the account, each
 * from a /24 of its own: after the check in progress, not after every guess in line. A guess from a network never
 * seen still waits its turn, a device cookie that carried wrong passwords loses its place, and nothing is refused. One check at a time, so the order of the answers is the order of the checks, whatever the machine's load.
 */
function ownerOnKnownNetwork(storeName: string, databaseUrl: () => Promise<string | undefined>) {
  describe(
    `the owner on a known network during a botnet-shaped attack on ${storeName}`,
    { timeout: 120_000 },
    () => {
      const cleanup: Array<() => unknown> = [];
      afterAll(async () => {
        for (const fn of cleanup.splice(0).reverse()) await fn();
      });

      async function service() {
        const dir = mkdtempSync(join(tmpdir(), "lightfleet-keys-network-"));
        cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
        const store = await openKeyStore(await databaseUrl(), dir);
        cleanup.push(() => store.close());
        const ctx = new KeysContext({
          store,
          pepper: Buffer.from(PEPPER),
          seedKey: Buffer.from(SEED_KEY),
          hashing: { total: 1, perAccount: 1, perAddress: 2, queue: 64, accountQueue: 256 },
        });
        return { ctx, accounts: new Accounts(ctx), sessions: new Sessions(ctx) };
      }

      /** Guesses from a /24 each, started together; their answers, in the order they come, go to `order`. */
      function botnet(sessions: Sessions, email: string, order: string[], from: number) {
        return Array.from({ length: GUESSES }, (_, i) =>
          sessions.login(email, `guess ${i}`, `10.${from}.${i}.1`).then(
            () => order.push(`guess ${i} let in`),
            (error: { code?: string }) => order.push(`guess ${i} ${error.code}`),
          ),
        );
      }

      it("checks the owner's password right after the check in progress, ahead of the guesses in line", async () => {
        const { ctx, accounts, sessions } = await service();
        const email = "home@example.org";
        await accounts.addUser(email, PASSWORD);
        // A complete login from the owner's usual network marks it as known.
        await sessions.login(email, PASSWORD, "192.0.2.5");
        const order: string[] = [];
        const guesses = botnet(sessions, email, order, 1);
        // One guess being checked, the others waiting in the account's line.
        await waitFor(() => ctx.gate.inLine(accountKey(email)) === GUESSES - 1, {
          what: "the guesses in line",
        });
        // A new browser (no device cookie) on the same /24.
        const owner = sessions.login(email, PASSWORD, "192.0.2.77").then((r) => {
          order.push("owner");
          return r;
        });
        await Promise.all([owner, ...guesses]);
        expect((await owner).token).toBeTruthy();
        expect(order.indexOf("owner")).toBe(1);
        // Every guess was checked and refused for its password: none was dropped for the owner.
        expect(order.filter((o) => o.endsWith("invalid-credentials"))).toHaveLength(GUESSES);
      });

      it("lets a network never seen wait its turn among the guesses, and refuses nobody", async () => {
        const { ctx, accounts, sessions } = await service();
        const email = "away@example.org";
        await accounts.addUser(email, PASSWORD);
        await sessions.login(email, PASSWORD, "192.0.2.5");
        const order: string[] = [];
        const guesses = botnet(sessions, email, order, 2);
        await waitFor(() => ctx.gate.inLine(accountKey(email)) === GUESSES - 1, {
          what: "the guesses in line",
        });
        const owner = sessions.login(email, PASSWORD, "198.18.0.1").then(() => order.push("owner"));
        await Promise.all([owner, ...guesses]);
        expect(order.indexOf("owner")).toBe(GUESSES);
      });

      it("checks a network never seen at the next free check when a botnet's guesses fill the line from many networks", async () => {
        const { ctx, accounts, sessions } = await service();
        const email = "botnet@example.org";
        await accounts.addUser(email, PASSWORD);
        const order: string[] = [];
        const many = NEWEST_FIRST_AFTER_NETWORKS + 4;
        const guesses = Array.from({ length: many }, (_, i) =>
          sessions.login(email, `guess ${i}`, `10.7.${i}.1`).then(
            () => order.push(`guess ${i} let in`),
            (error: { code?: string }) => order.push(`guess ${i} ${error.code}`),
          ),
        );
        await waitFor(() => ctx.gate.inLine(accountKey(email)) === many - 1, {
          what: "the guesses in line",
        });
        const owner = sessions.login(email, PASSWORD, "198.18.7.1").then((r) => {
          order.push("owner");
          return r;
        });
        await Promise.all([owner, ...guesses]);
        expect((await owner).token).toBeTruthy();
        expect(order.indexOf("owner")).toBe(1);
        // Every guess got its answer (none waited past the line's longest wait here), and none got in: the order
        // changed, not the limits (past ten failures the slow-down answers guesses 429).
        const answers = order.filter((o) => o.startsWith("guess"));
        expect(answers).toHaveLength(many);
        expect(answers.every((a) => / (invalid-credentials|throttled)$/.test(a))).toBe(true);
      });

      it("does not take a network from a login that still owes its second factor", async () => {
        const { ctx, accounts, sessions } = await service();
        const email = "half@example.org";
        await accounts.addUser(email, PASSWORD);
        await accounts.enableTwoFactor(email);
        // The password alone from 192.0.2.0/24: the second factor is still owed, so the network is not the owner's yet.
        expect((await sessions.login(email, PASSWORD, "192.0.2.5")).twoFactorRequired).toBe(true);
        const order: string[] = [];
        const guesses = botnet(sessions, email, order, 3);
        await waitFor(() => ctx.gate.inLine(accountKey(email)) === GUESSES - 1, {
          what: "the guesses in line",
        });
        const owner = sessions.login(email, PASSWORD, "192.0.2.6").then(() => order.push("owner"));
        await Promise.all([owner, ...guesses]);
        expect(order.indexOf("owner")).toBe(GUESSES);
      });

      it("checks the owner's password with a current code right after the check in progress, from a network never seen", async () => {
        const { ctx, accounts, sessions } = await service();
        const email = "code@example.org";
        await accounts.addUser(email, PASSWORD);
        const { secret } = await accounts.enableTwoFactor(email);
        const order: string[] = [];
        // The botnet sends made-up codes with its guesses: each still gets its password check, in turn.
        const guesses = Array.from({ length: GUESSES }, (_, i) =>
          sessions.login(email, `guess ${i}`, `10.6.${i}.1`, { code: String(100000 + i) }).then(
            () => order.push(`guess ${i} let in`),
            (error: { code?: string }) => order.push(`guess ${i} ${error.code}`),
          ),
        );
        await waitFor(() => ctx.gate.inLine(accountKey(email)) === GUESSES - 1, {
          what: "the guesses in line",
        });
        const code = generateSync({ secret, epoch: Math.floor(Date.now() / 1000) });
        const owner = sessions.login(email, PASSWORD, "198.18.6.1", { code }).then((r) => {
          order.push("owner");
          return r;
        });
        await Promise.all([owner, ...guesses]);
        expect((await owner).twoFactorRequired).toBe(false);
        expect(order.indexOf("owner")).toBe(1);
        expect(order.filter((o) => o.endsWith("invalid-credentials"))).toHaveLength(GUESSES);
      });

      it("stops letting a device cookie skip the line once it has carried five wrong passwords", async () => {
        const { ctx, accounts, sessions } = await service();
        const email = "device@example.org";
        await accounts.addUser(email, PASSWORD);
        const { deviceToken } = await sessions.login(email, PASSWORD, "192.0.2.5");
        /** The owner's browser logs in from a network never seen while a botnet's guesses wait; its place in the answers. */
        const placeDuringAttack = async (from: number) => {
          const order: string[] = [];
          const guesses = botnet(sessions, email, order, from);
          await waitFor(() => ctx.gate.inLine(accountKey(email)) === GUESSES - 1, {
            what: "the guesses in line",
          });
          const owner = sessions.login(email, PASSWORD, `198.18.${from}.1`, { deviceToken }).then((r) => {
            order.push("owner");
            return r;
          });
          await Promise.all([owner, ...guesses]);
          expect((await owner).token).toBeTruthy();
          return order.indexOf("owner");
        };
        // The cookie skips the line and has a check of its own: it waits for no guess (first or second, by the cores).
        expect(await placeDuringAttack(4)).toBeLessThanOrEqual(1);
        // Five wrong passwords through that cookie (each from an address of its own, so no other limit is reached).
        for (let i = 0; i < 5; i++)
          await expect(
            sessions.login(email, "wrong", `203.0.113.${i}`, { deviceToken }),
          ).rejects.toMatchObject({
            code: "invalid-credentials",
          });
        // Now it waits its turn like a new browser: not refused, not ahead.
        expect(await placeDuringAttack(5)).toBe(GUESSES);
      });
    },
  );
}

let postgres: Awaited<ReturnType<typeof startPostgres>> | undefined;
afterAll(async () => {
  await postgres?.stop();
});

ownerOnKnownNetwork("SQLite", () => Promise.resolve(undefined));
let databases = 0;
ownerOnKnownNetwork("PostgreSQL", async () => {
  postgres ??= await startPostgres();
  const name = `network${databases++}`;
  await postgres.createDatabase(name);
  return postgres.url(name);
});
