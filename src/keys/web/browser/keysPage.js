/**
 * The page's script, served as /app.js exactly as it is here (no build step), a module script of the page. Plain
 * browser JavaScript, type-checked through its JSDoc against the DOM (browser/tsconfig.json, `npm run typecheck`),
 * linted and formatted like the rest of the code. Everything the session can do: log in with the
 * second factor, list, name, deactivate, activate and delete its pairs, create one (secret shown once, copy and
 * download, "I have saved it" before it goes), set up two-factor authentication and turn it off (password and code
 * confirmed), change the password, see and end
 * sessions, read the account's audit trail. Focus moves to each new step; text is set with textContent only.
 */
/**
 * The page's element with this id, checked to be of the kind the caller asks for (so a renamed id or a changed
 * element fails at once, with its name, rather than as "cannot read properties of null" later).
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @param {{ new (): T }} [kind]
 * @returns {T}
 */
function $(id, kind) {
  const element = document.getElementById(id);
  if (!(element instanceof (kind ?? HTMLElement)))
    throw new Error("the page has no " + (kind?.name ?? "element") + " #" + id);
  return /** @type {T} */ (element);
}
/**
 * @typedef {{ email: string, twoFactor: boolean, twoFactorPending?: boolean, keyLimit: number }} Me
 * @typedef {{ accessKeyId: string, name: string | null, status: "Active" | "Inactive", createdAt: string, lastUsedAt: string | null }} Key
 * @typedef {{ accessKeyId: string, secretKey: string }} CreatedKey
 */
/** @type {{ me: Me | null, keys: Key[], created: CreatedKey | null, deleting: Key | null }} */
const state = { me: null, keys: [], created: null, deleting: null };

/** A refusal of the API, with its problem code and HTTP status. */
class ApiError extends Error {
  /** @param {string} message @param {string | undefined} code @param {number} status */
  constructor(message, code, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

function say(message) {
  $("status").textContent = message;
}
function fail(message) {
  $("error").textContent = message;
}
function focusOn(id) {
  const el = document.getElementById(id);
  if (el) el.focus();
}

async function api(method, path, body) {
  $("error").textContent = "";
  const response = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return {};
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    let message = data.detail || data.title || "the request failed";
    if (response.status === 429) message += " (try again in " + response.headers.get("retry-after") + " s)";
    throw new ApiError(message, data.code, response.status);
  }
  return data;
}

/** A failure: a lost session goes back to the login step, anything else is shown. */
function handle(error) {
  if (error && error.code === "session-required") {
    show("login");
    fail("Your session has ended: log in again.");
    return;
  }
  fail(error && error.message ? error.message : String(error));
}

function show(step) {
  $("login").hidden = step !== "login";
  $("twofactor").hidden = step !== "twofactor";
  $("app").hidden = step !== "app";
  $("account-bar").hidden = step !== "app";
  const heading = { login: "login-title", twofactor: "twofactor-title", app: "keys-title" }[step];
  focusOn(heading);
}

function relative(iso) {
  const seconds = Math.round((Date.now() - Date.parse(iso)) / 1000);
  /** @type {Array<[Intl.RelativeTimeFormatUnit, number]>} */
  const units = [
    ["year", 31536000],
    ["month", 2592000],
    ["day", 86400],
    ["hour", 3600],
    ["minute", 60],
  ];
  const format = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
  for (const [unit, size] of units)
    if (Math.abs(seconds) >= size) return format.format(-Math.round(seconds / size), unit);
  return "just now";
}
function timeCell(iso, never) {
  const td = document.createElement("td");
  if (!iso) {
    td.textContent = never;
    return td;
  }
  const time = document.createElement("time");
  time.dateTime = iso;
  time.title = new Date(iso).toLocaleString();
  time.textContent = relative(iso);
  td.append(time);
  return td;
}
function cell(label, content) {
  const td =
    content instanceof HTMLElement && content.tagName === "TD" ? content : document.createElement("td");
  if (!(content instanceof HTMLElement && content.tagName === "TD")) {
    if (content instanceof Node) td.append(content);
    else td.textContent = content;
  }
  td.dataset.label = label;
  return td;
}
function button(text, label, onClick, kind) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.setAttribute("aria-label", label);
  if (kind) b.className = kind;
  b.addEventListener("click", onClick);
  return b;
}

/** As AWS IAM and the CIS benchmarks: a key older than this should be replaced by a new one. */
const ROTATE_AFTER_DAYS = 90;
function ageDays(k) {
  return Math.floor((Date.now() - Date.parse(k.createdAt)) / 86400000);
}
function ageCell(k) {
  const td = document.createElement("td");
  const days = ageDays(k);
  const time = document.createElement("time");
  time.dateTime = k.createdAt;
  time.title = "Created " + new Date(k.createdAt).toLocaleString();
  time.textContent = days + (days === 1 ? " day" : " days");
  td.append(time);
  if (days >= ROTATE_AFTER_DAYS) {
    const badge = document.createElement("span");
    badge.className = "badge rotate";
    badge.textContent = "Rotate";
    td.append(" ", badge);
  }
  return td;
}
/** The reminder above the table: which keys are due, and the steps of a rotation within the two-key quota. */
function showRotateReminder(keys, limit) {
  const due = keys.filter((k) => ageDays(k) >= ROTATE_AFTER_DAYS);
  const box = $("rotate-reminder");
  box.textContent = "";
  box.hidden = due.length === 0;
  if (due.length === 0) return;
  const heading = document.createElement("h2");
  heading.textContent =
    due.length === 1 ? "A key is due for rotation" : due.length + " keys are due for rotation";
  const which = document.createElement("p");
  which.append("Keys older than " + ROTATE_AFTER_DAYS + " days: ");
  due.forEach((k, i) => {
    const code = document.createElement("code");
    code.textContent = k.accessKeyId;
    which.append(i > 0 ? ", " : "", code, " (" + ageDays(k) + " days" + (k.name ? ", " + k.name : "") + ")");
  });
  which.append(". A key that is never replaced stays usable by anyone who copied it along the way.");
  const steps = document.createElement("ol");
  const items = [];
  if (keys.length >= limit)
    items.push("delete a key you no longer use, to free one of your " + limit + " slots;");
  items.push(
    "create a new key and move your clients to it;",
    "deactivate the old key and check nothing fails;",
    "delete the old key.",
  );
  for (const text of items) {
    const li = document.createElement("li");
    li.textContent = text;
    steps.append(li);
  }
  box.append(heading, which, steps);
}

async function loadKeys() {
  const { keys } = await api("GET", "/v1/user/keys");
  state.keys = keys;
  // The quota counts Inactive pairs too (as AWS's), so the button follows the total.
  const limit = state.me ? state.me.keyLimit : 2;
  $("quota").textContent =
    keys.length === 0
      ? ""
      : keys.length +
        " of " +
        limit +
        " keys (Inactive ones count too)." +
        (keys.length >= limit
          ? " To create another, delete one (deactivate it first to check nothing still uses it)."
          : "");
  $("create", HTMLButtonElement).disabled = keys.length >= limit || state.created !== null;
  showRotateReminder(keys, limit);
  closeDelete();
  const rows = $("key-rows");
  rows.textContent = "";
  $("no-keys").hidden = keys.length > 0;
  $("key-table").hidden = keys.length === 0;
  for (const k of keys) {
    const tr = document.createElement("tr");
    tr.dataset.id = k.accessKeyId;
    const badge = document.createElement("span");
    badge.className = "badge " + k.status.toLowerCase();
    badge.textContent = k.status;
    const code = document.createElement("code");
    code.textContent = k.accessKeyId;
    tr.append(
      cell("Name", k.name || "(no name)"),
      cell("Access key id", code),
      cell("Status", badge),
      cell("Age", ageCell(k)),
      cell("Last used", timeCell(k.lastUsedAt, "never")),
    );
    const actions = cell("Actions", "");
    const who = (k.name ? k.name + " " : "") + k.accessKeyId;
    actions.append(button("Rename", "Rename " + who, () => rename(k)));
    if (k.status === "Active")
      actions.append(button("Deactivate", "Deactivate " + who, () => setStatus(k, "Inactive")));
    else actions.append(button("Activate", "Activate " + who, () => setStatus(k, "Active")));
    // As the API: any pair can be deleted; the step warns when it is still Active.
    actions.append(button("Delete", "Delete " + who, () => askDelete(k), "danger"));
    tr.append(actions);
    rows.append(tr);
  }
}

async function setStatus(k, status) {
  try {
    await api("PATCH", "/v1/keys/" + encodeURIComponent(k.accessKeyId), { status });
    await loadKeys();
    await loadAudit();
    say(k.accessKeyId + " is now " + status);
    const row = /** @type {HTMLElement | null} */ (
      document.querySelector('tr[data-id="' + k.accessKeyId + '"] button')
    );
    if (row) row.focus();
  } catch (error) {
    handle(error);
  }
}

function rename(k) {
  const td = document.querySelector('tr[data-id="' + k.accessKeyId + '"] td');
  if (!td) return;
  td.textContent = "";
  const form = document.createElement("form");
  const id = "rename-" + k.accessKeyId;
  const label = document.createElement("label");
  label.htmlFor = id;
  label.textContent = "New name";
  const input = document.createElement("input");
  input.id = id;
  input.maxLength = 64;
  input.value = k.name || "";
  const save = document.createElement("button");
  save.type = "submit";
  save.textContent = "Save";
  form.append(label, input, save);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const name = input.value.trim();
      await api("PATCH", "/v1/keys/" + encodeURIComponent(k.accessKeyId), {
        name: name === "" ? null : name,
      });
      await loadKeys();
      await loadAudit();
      say("renamed " + k.accessKeyId);
    } catch (error) {
      handle(error);
    }
  });
  td.append(form);
  input.focus();
}

// The delete step opens right below its row (a row of its own), not away from it at the top of the table.
function closeDelete() {
  const dialog = $("delete-dialog");
  dialog.hidden = true;
  state.deleting = null;
  const holder = dialog.closest("tr.dialog-row");
  $("key-table").before(dialog);
  if (holder) holder.remove();
}
function askDelete(k) {
  closeDelete();
  state.deleting = k;
  const row = document.querySelector('tr[data-id="' + k.accessKeyId + '"]');
  if (row) {
    const holder = document.createElement("tr");
    holder.className = "dialog-row";
    const td = document.createElement("td");
    td.colSpan = row.children.length;
    td.append($("delete-dialog"));
    holder.append(td);
    row.after(holder);
  }
  $("delete-id").textContent = k.accessKeyId;
  $("delete-active").hidden = k.status !== "Active";
  $("delete-confirm", HTMLInputElement).value = "";
  $("delete-go", HTMLButtonElement).disabled = true;
  $("delete-dialog").hidden = false;
  focusOn("delete-title");
}
$("delete-confirm", HTMLInputElement).addEventListener("input", () => {
  $("delete-go", HTMLButtonElement).disabled =
    !state.deleting || $("delete-confirm", HTMLInputElement).value.trim() !== state.deleting.accessKeyId;
});
$("delete-cancel", HTMLButtonElement).addEventListener("click", () => {
  closeDelete();
  focusOn("keys-title");
});
$("delete-go", HTMLButtonElement).addEventListener("click", async () => {
  const k = state.deleting;
  if (!k || $("delete-confirm", HTMLInputElement).value.trim() !== k.accessKeyId) return;
  try {
    await api("DELETE", "/v1/keys/" + encodeURIComponent(k.accessKeyId));
    closeDelete();
    await loadKeys();
    await loadAudit();
    say("deleted " + k.accessKeyId);
    focusOn("keys-title");
  } catch (error) {
    handle(error);
  }
});

$("create-form", HTMLFormElement).addEventListener("submit", async (e) => {
  e.preventDefault();
  try {
    const name = $("key-name", HTMLInputElement).value.trim();
    const k = await api("POST", "/v1/keys/", name ? { name } : {});
    state.created = k;
    $("key-name", HTMLInputElement).value = "";
    $("created-id").textContent = k.accessKeyId;
    $("created-secret").textContent = k.secretKey;
    $("saved", HTMLInputElement).checked = false;
    $("done", HTMLButtonElement).disabled = true;
    $("created").hidden = false;
    await loadKeys();
    await loadAudit();
    focusOn("created-title");
  } catch (error) {
    if (error instanceof ApiError && error.code === "key-limit-exceeded")
      fail(
        "You have " +
          (state.me ? state.me.keyLimit : 2) +
          " keys, the most allowed (Inactive ones count too): deactivate one and delete it to create another.",
      );
    else handle(error);
  }
});
async function copy(text, what) {
  try {
    await navigator.clipboard.writeText(text);
    say(what + " copied");
  } catch {
    fail("Copying is not allowed here: select the text and copy it by hand.");
  }
}
$("copy-id", HTMLButtonElement).addEventListener("click", () =>
  copy(state.created?.accessKeyId ?? "", "access key id"),
);
$("copy-secret", HTMLButtonElement).addEventListener("click", () =>
  copy(state.created?.secretKey ?? "", "secret access key"),
);
$("download", HTMLButtonElement).addEventListener("click", () => {
  const k = state.created;
  if (!k) return;
  const csv = "Access key ID,Secret access key\r\n" + k.accessKeyId + "," + k.secretKey + "\r\n";
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([csv], { type: "text/csv" }));
  a.download = "lightfleet-" + k.accessKeyId + ".csv";
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 0);
  say("downloaded " + a.download);
});
$("saved", HTMLInputElement).addEventListener("change", () => {
  $("done", HTMLButtonElement).disabled = !$("saved", HTMLInputElement).checked;
});
$("done", HTMLButtonElement).addEventListener("click", async () => {
  state.created = null;
  $("created-id").textContent = "";
  $("created-secret").textContent = "";
  $("created").hidden = true;
  focusOn("keys-title");
  await loadKeys().catch(handle);
});

async function loadSecurity() {
  const me = state.me;
  if (!me) return;
  $("tf-state").textContent = me.twoFactor
    ? "On: logins ask for a code from your authenticator app."
    : "Off: anyone with your password can log in.";
  $("tf-start", HTMLButtonElement).hidden = me.twoFactor;
  $("tf-off-start", HTMLButtonElement).hidden = !me.twoFactor;
  if (me.twoFactor) $("tf-setup").hidden = true;
  else closeTwoFactorOff();
}
// Set-up asks for the password first (as the server does), then shows the QR code; each step has a Cancel.
function closeTwoFactorSetup(focusId) {
  $("tf-auth").hidden = true;
  $("tf-setup").hidden = true;
  $("tf-start", HTMLButtonElement).setAttribute("aria-expanded", "false");
  $("tf-auth-password", HTMLInputElement).value = "";
  $("tf-code", HTMLInputElement).value = "";
  $("tf-secret").textContent = "";
  $("tf-qr", HTMLImageElement).removeAttribute("src");
  if (focusId) focusOn(focusId);
}
$("tf-start", HTMLButtonElement).addEventListener("click", () => {
  $("tf-auth").hidden = false;
  $("tf-start", HTMLButtonElement).setAttribute("aria-expanded", "true");
  focusOn("tf-auth-password");
});
$("tf-auth-cancel", HTMLButtonElement).addEventListener("click", () => closeTwoFactorSetup("tf-start"));
$("tf-setup-cancel", HTMLButtonElement).addEventListener("click", () => closeTwoFactorSetup("tf-start"));
$("tf-auth").addEventListener("keydown", (e) => {
  if (e.key === "Escape") closeTwoFactorSetup("tf-start");
});
$("tf-auth-form", HTMLFormElement).addEventListener("submit", async (e) => {
  e.preventDefault();
  try {
    const setup = await api("POST", "/v1/user/twofactor/setup", {
      currentPassword: $("tf-auth-password", HTMLInputElement).value,
    });
    $("tf-auth-password", HTMLInputElement).value = "";
    $("tf-auth").hidden = true;
    $("tf-qr", HTMLImageElement).src = "data:image/svg+xml;base64," + btoa(setup.qrSvg);
    $("tf-secret").textContent = setup.secret;
    $("tf-setup").hidden = false;
    focusOn("tf-setup-title");
  } catch (error) {
    handle(error);
  }
});
$("tf-confirm-form", HTMLFormElement).addEventListener("submit", async (e) => {
  e.preventDefault();
  try {
    const { recoveryCodes } = await api("POST", "/v1/user/twofactor/confirm", {
      token: $("tf-code", HTMLInputElement).value,
    });
    closeTwoFactorSetup();
    state.me = await api("GET", "/v1/user/me");
    await loadSecurity();
    await loadAudit();
    const list = $("tf-recovery-codes");
    list.textContent = "";
    for (const code of recoveryCodes) {
      const li = document.createElement("li");
      li.textContent = code;
      list.append(li);
    }
    $("tf-recovery").hidden = false;
    say("two-factor authentication is on; save the recovery codes");
    focusOn("tf-recovery-title");
  } catch (error) {
    handle(error);
  }
});
$("tf-recovery-done", HTMLButtonElement).addEventListener("click", () => {
  $("tf-recovery-codes").textContent = "";
  $("tf-recovery").hidden = true;
  focusOn("security-title");
});
// Turning two-factor off: a confirmation step that asks for the password and a code, as the server does.
function closeTwoFactorOff(focusId) {
  $("tf-off").hidden = true;
  $("tf-off-start", HTMLButtonElement).setAttribute("aria-expanded", "false");
  $("tf-off-password", HTMLInputElement).value = "";
  $("tf-off-code", HTMLInputElement).value = "";
  $("tf-off-error").textContent = "";
  if (focusId) focusOn(focusId);
}
$("tf-off-start", HTMLButtonElement).addEventListener("click", () => {
  $("tf-off").hidden = false;
  $("tf-off-start", HTMLButtonElement).setAttribute("aria-expanded", "true");
  focusOn("tf-off-title");
});
$("tf-off-cancel", HTMLButtonElement).addEventListener("click", () => closeTwoFactorOff("tf-off-start"));
$("tf-off").addEventListener("keydown", (e) => {
  if (e.key === "Escape") closeTwoFactorOff("tf-off-start");
});
$("tf-off-form", HTMLFormElement).addEventListener("submit", async (e) => {
  e.preventDefault();
  $("tf-off-error").textContent = "";
  try {
    await api("POST", "/v1/user/twofactor/disable", {
      currentPassword: $("tf-off-password", HTMLInputElement).value,
      token: $("tf-off-code", HTMLInputElement).value,
    });
    closeTwoFactorOff();
    state.me = await api("GET", "/v1/user/me");
    await loadSecurity();
    await loadSessions();
    await loadAudit();
    say("two-factor authentication is off; your other sessions have ended");
    focusOn("security-title");
  } catch (error) {
    if (!(error instanceof ApiError) || error.code === "session-required") {
      handle(error);
      return;
    }
    // Shown next to the form (on a phone the page's own error line is out of view), focus on what to fix.
    $("tf-off-error").textContent = error.message;
    const field =
      error.code === "invalid-credentials"
        ? "tf-off-password"
        : error.code === "invalid-two-factor-token"
          ? "tf-off-code"
          : null;
    if (field) {
      $(field, HTMLInputElement).value = "";
      focusOn(field);
    }
  }
});
$("password-form", HTMLFormElement).addEventListener("submit", async (e) => {
  e.preventDefault();
  try {
    await api("POST", "/v1/user/password", {
      currentPassword: $("pw-current", HTMLInputElement).value,
      newPassword: $("pw-new", HTMLInputElement).value,
    });
    $("pw-current", HTMLInputElement).value = "";
    $("pw-new", HTMLInputElement).value = "";
    await loadSessions();
    await loadAudit();
    say("password changed; your other sessions have ended");
  } catch (error) {
    handle(error);
  }
});

async function loadSessions() {
  const { sessions } = await api("GET", "/v1/user/sessions");
  const list = $("session-list");
  list.textContent = "";
  for (const s of sessions) {
    const li = document.createElement("li");
    const text = document.createElement("span");
    text.textContent =
      (s.current ? "This session" : "Session") +
      ": " +
      browserName(s.userAgent) +
      " from " +
      (s.ip || "an unknown address") +
      ", last active " +
      relative(s.lastSeenAt);
    if (s.userAgent) text.title = s.userAgent;
    li.append(text);
    if (!s.current)
      li.append(
        document.createTextNode(" "),
        button("End", "End session from " + (s.ip || "unknown"), async () => {
          try {
            await api("DELETE", "/v1/user/sessions/" + encodeURIComponent(s.id));
            await loadSessions();
            await loadAudit();
            say("session ended");
            focusOn("sessions-title");
          } catch (error) {
            handle(error);
          }
        }),
      );
    list.append(li);
  }
}
/** The audit trail's event codes in words. */
const EVENTS = {
  login: "Logged in",
  "login-failed": "Failed login",
  "login-throttled": "Logins slowed down",
  "two-factor": "Second factor passed",
  "two-factor-failed": "Wrong two-factor code",
  logout: "Logged out",
  "cross-site-refused": "Cross-site request refused",
  "key-created": "Key created",
  "key-deleted": "Key deleted",
  "key-delete-failed": "Key not deleted",
  "key-updated": "Key changed",
  "session-revoked": "Session ended",
  "password-changed": "Password changed",
  "two-factor-enabled": "Two-factor authentication turned on",
  "two-factor-disabled": "Two-factor authentication turned off",
  "two-factor-disable-failed": "Two-factor not turned off",
  "two-factor-enable-failed": "Two-factor set-up refused",
  "key-auth-failed": "Key used with a wrong secret",
  "key-auth-throttled": "Key checks slowed down",
  "user-added": "Account created",
  "user-disabled": "Account disabled",
  "user-enabled": "Account enabled",
};
/** "Firefox on Linux" from a user-agent string; the whole string is on hover. */
function browserName(ua) {
  if (!ua) return "unknown browser";
  const has = (part) => ua.includes(part);
  const browser = has("Edg/")
    ? "Edge"
    : has("Firefox/")
      ? "Firefox"
      : has("Chrome/") || has("Chromium/")
        ? "Chrome"
        : has("Safari/")
          ? "Safari"
          : ua.startsWith("curl/")
            ? "curl"
            : "a browser";
  const os = has("Android")
    ? "Android"
    : has("iPhone") || has("iPad")
      ? "iOS"
      : has("Windows")
        ? "Windows"
        : has("Mac OS X")
          ? "macOS"
          : has("Linux")
            ? "Linux"
            : "";
  return os ? browser + " on " + os : browser;
}

async function loadAudit() {
  const { entries } = await api("GET", "/v1/user/audit");
  const list = $("audit-list");
  list.textContent = "";
  for (const entry of entries.slice(0, 20)) {
    const li = document.createElement("li");
    const time = document.createElement("time");
    time.dateTime = entry.at;
    time.title = new Date(entry.at).toLocaleString();
    time.textContent = relative(entry.at);
    li.append(
      time,
      document.createTextNode(
        ": " + (EVENTS[entry.event] || entry.event) + (entry.detail ? " (" + entry.detail + ")" : ""),
      ),
    );
    list.append(li);
  }
}

async function enter() {
  /** @type {Me} */
  const me = await api("GET", "/v1/user/me");
  state.me = me;
  if (me.twoFactorPending) {
    show("twofactor");
    return;
  }
  $("who").textContent = me.email;
  show("app");
  await Promise.all([loadKeys(), loadSecurity(), loadSessions(), loadAudit()]);
}

$("login-form", HTMLFormElement).addEventListener("submit", async (e) => {
  e.preventDefault();
  try {
    await api("POST", "/v1/user/login", {
      email: $("email", HTMLInputElement).value,
      password: $("password", HTMLInputElement).value,
    });
    $("password", HTMLInputElement).value = "";
    await enter();
  } catch (error) {
    handle(error);
  }
});
// The second step: a code from the app, or a recovery code when the authenticator is lost.
function useRecovery(on) {
  $("token-field").hidden = on;
  $("token", HTMLInputElement).disabled = on;
  $("recovery-field").hidden = !on;
  $("recovery-code", HTMLInputElement).disabled = !on;
  $("twofactor-help").hidden = on;
  $("twofactor-code-help").hidden = !on;
  focusOn(on ? "recovery-code" : "token");
}
$("twofactor-use-recovery", HTMLButtonElement).addEventListener("click", () => useRecovery(true));
$("twofactor-use-code", HTMLButtonElement).addEventListener("click", () => useRecovery(false));
$("twofactor-form", HTMLFormElement).addEventListener("submit", async (e) => {
  e.preventDefault();
  const body = $("recovery-code", HTMLInputElement).disabled
    ? { token: $("token", HTMLInputElement).value }
    : { recoveryCode: $("recovery-code", HTMLInputElement).value };
  try {
    await api("POST", "/v1/user/login/twofactor", body);
    $("token", HTMLInputElement).value = "";
    $("recovery-code", HTMLInputElement).value = "";
    await enter();
  } catch (error) {
    handle(error);
  }
});
// Back to the login form: the half-open session ends.
$("twofactor-back", HTMLButtonElement).addEventListener("click", async () => {
  await api("POST", "/v1/user/logout").catch(() => {});
  $("token", HTMLInputElement).value = "";
  $("recovery-code", HTMLInputElement).value = "";
  useRecovery(false);
  show("login");
});
$("logout", HTMLButtonElement).addEventListener("click", async () => {
  await api("POST", "/v1/user/logout").catch(() => {});
  state.me = null;
  state.created = null;
  $("created").hidden = true;
  $("created-secret").textContent = "";
  $("key-rows").textContent = "";
  $("rotate-reminder").hidden = true;
  $("rotate-reminder").textContent = "";
  show("login");
});

// A reload keeps the session: ask who is logged in before showing anything.
api("GET", "/v1/user/me")
  .then(
    () => enter(),
    () => {
      $("error").textContent = "";
      show("login");
    },
  )
  .catch(handle);
