import { Accounts } from "./service/accounts.js";
import { AuditTrail } from "./service/auditTrail.js";
import { KeysContext, type KeysServiceOptions } from "./service/context.js";
import { KeyPairs } from "./service/keyPairs.js";
import { prune } from "./service/retention.js";
import { Sessions } from "./service/sessions.js";
import { AccountSettings } from "./service/settings.js";

export type { Actor, KeysServiceOptions } from "./service/context.js";
export { MIN_PASSWORD_LENGTH } from "./service/credentials.js";
export { KeysError } from "./service/errors.js";
export { LAST_USED_RESOLUTION_MS, MAX_ACTIVE_KEYS } from "./service/keyPairs.js";
export type { KeyPairView, KeyStatus, OwnKeyPairView } from "./service/keyPairs.js";
export { SLOWED_CHECKS_PER_ADDRESS } from "./service/sessions.js";
export type { SessionInfo } from "./service/sessions.js";

/**
 * The key API's rules, apart from HTTP: accounts, sessions with a second factor, throttled logins, and key pairs of
 * which at most two exist per account. Every time comes from the injected clock. Each concern is a module of
 * service/ sharing one context (store, clock, throttles, audit); this front keeps the one object the HTTP layer and
 * the CLI call.
 */
export class KeysService {
  private readonly context: KeysContext;
  private readonly accounts: Accounts;
  private readonly sessions: Sessions;
  private readonly settings: AccountSettings;
  private readonly keyPairs: KeyPairs;
  private readonly auditTrail: AuditTrail;

  constructor(options: KeysServiceOptions) {
    this.context = new KeysContext(options);
    this.accounts = new Accounts(this.context);
    this.sessions = new Sessions(this.context);
    this.settings = new AccountSettings(this.context);
    this.keyPairs = new KeyPairs(this.context);
    this.auditTrail = new AuditTrail(this.context);
  }

  // Accounts, from the CLI.
  addUser: Accounts["addUser"] = (...a) => this.accounts.addUser(...a);
  listUsers: Accounts["listUsers"] = (...a) => this.accounts.listUsers(...a);
  enableTwoFactor: Accounts["enableTwoFactor"] = (...a) => this.accounts.enableTwoFactor(...a);
  disableTwoFactor: Accounts["disableTwoFactor"] = (...a) => this.accounts.disableTwoFactor(...a);
  disableUser: Accounts["disableUser"] = (...a) => this.accounts.disableUser(...a);
  enableUser: Accounts["enableUser"] = (...a) => this.accounts.enableUser(...a);
  setPassword: Accounts["setPassword"] = (...a) => this.accounts.setPassword(...a);
  sealClearSeeds: Accounts["sealClearSeeds"] = (...a) => this.accounts.sealClearSeeds(...a);

  // Sessions.
  login: Sessions["login"] = (...a) => this.sessions.login(...a);
  completeTwoFactor: Sessions["completeTwoFactor"] = (...a) => this.sessions.completeTwoFactor(...a);
  logout: Sessions["logout"] = (...a) => this.sessions.logout(...a);
  session: Sessions["session"] = (...a) => this.sessions.session(...a);

  // The account, for the page.
  me: AccountSettings["me"] = (...a) => this.settings.me(...a);
  listSessions: AccountSettings["listSessions"] = (...a) => this.settings.listSessions(...a);
  revokeSession: AccountSettings["revokeSession"] = (...a) => this.settings.revokeSession(...a);
  changePassword: AccountSettings["changePassword"] = (...a) => this.settings.changePassword(...a);
  startTwoFactorSetup: AccountSettings["startTwoFactorSetup"] = (...a) =>
    this.settings.startTwoFactorSetup(...a);
  confirmTwoFactorSetup: AccountSettings["confirmTwoFactorSetup"] = (...a) =>
    this.settings.confirmTwoFactorSetup(...a);
  turnOffTwoFactor: AccountSettings["turnOffTwoFactor"] = (...a) => this.settings.turnOffTwoFactor(...a);

  // Key pairs.
  createKey: KeyPairs["createKey"] = (...a) => this.keyPairs.createKey(...a);
  updateKey: KeyPairs["updateKey"] = (...a) => this.keyPairs.updateKey(...a);
  listOwnKeys: KeyPairs["listOwnKeys"] = (...a) => this.keyPairs.listOwnKeys(...a);
  listKeys: KeyPairs["listKeys"] = (...a) => this.keyPairs.listKeys(...a);
  deleteKey: KeyPairs["deleteKey"] = (...a) => this.keyPairs.deleteKey(...a);

  // The audit trail.
  listAudit: AuditTrail["listAudit"] = (...a) => this.auditTrail.listAudit(...a);
  accountAudit: AuditTrail["accountAudit"] = (...a) => this.auditTrail.accountAudit(...a);
  record: AuditTrail["record"] = (...a) => this.auditTrail.record(...a);

  // Retention.
  prune = () => prune(this.context);
}
