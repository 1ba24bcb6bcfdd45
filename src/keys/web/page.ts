/**
 * The key API's web page: one document, one script and one style sheet, served by the key API itself (no build step,
 * no other origin, no inline code, so the Content-Security-Policy needs no 'unsafe-inline').
 */
const INDEX = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lightfleet API keys</title>
<link rel="stylesheet" href="/app.css">
</head>
<body>
<h1>lightfleet API keys</h1>
<p id="error" class="error" role="alert"></p>

<section id="login">
  <form id="login-form">
    <label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required>
    <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
    <button type="submit">Log in</button>
  </form>
</section>

<section id="twofactor" hidden>
  <form id="twofactor-form">
    <label for="token">Code from your authenticator app</label>
    <input id="token" name="token" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" required>
    <button type="submit">Verify</button>
  </form>
</section>

<section id="keys" hidden>
  <button id="create">Create a key pair</button>
  <button id="logout">Log out</button>
  <div id="created" class="secret" hidden>
    <p><strong>Copy the secret key now: it is shown only once.</strong></p>
    <p>Access key id: <code id="created-id"></code></p>
    <p>Secret key: <code id="created-secret"></code></p>
  </div>
  <h2>Your key pairs</h2>
  <p class="muted">Listing uses a key pair: the one you just created, or one you enter.</p>
  <form id="list-form">
    <label for="list-id">Access key id</label><input id="list-id" autocomplete="off">
    <label for="list-secret">Secret key</label><input id="list-secret" type="password" autocomplete="off">
    <button type="submit">List</button>
  </form>
  <table><thead><tr><th>Access key id</th><th>Status</th><th>Created</th><th>Last used</th><th></th></tr></thead>
  <tbody id="key-rows"></tbody></table>
</section>

<script src="/app.js" defer></script>
</body>
</html>
`;

const CSS = `  body { font: 15px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; color: #1d232b; }
  h1 { font-size: 1.4rem; } section { margin: 1.5rem 0; } [hidden] { display: none !important; }
  label { display: block; margin: .5rem 0 .2rem; } input { font: inherit; padding: .35rem .5rem; width: 100%; box-sizing: border-box; }
  button { font: inherit; padding: .4rem .9rem; margin-top: .6rem; cursor: pointer; }
  table { border-collapse: collapse; width: 100%; } td, th { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid #ddd; }
  code { background: #f2f4f7; padding: .1rem .3rem; word-break: break-all; }
  .secret { border: 2px solid #c77d00; background: #fff8e6; padding: .8rem; }
  .error { color: #b00020; } .muted { color: #5b6470; }
`;

const SCRIPT = `const $ = (id) => document.getElementById(id);
const show = (id) => { for (const s of ["login", "twofactor", "keys"]) $(s).hidden = s !== id; };
const fail = (message) => { $("error").textContent = message; };
async function api(method, path, body, headers = {}) {
  $("error").textContent = "";
  const response = await fetch(path, {
    method, credentials: "same-origin",
    headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return {};
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = (data.detail || data.title || "request failed") + (response.status === 429 ? " (retry in " + response.headers.get("retry-after") + " s)" : "");
    throw Object.assign(new Error(message), { code: data.code });
  }
  return data;
}
$("login-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  try {
    const r = await api("POST", "/v1/user/login", { email: $("email").value, password: $("password").value });
    $("password").value = "";
    show(r.twoFactorRequired ? "twofactor" : "keys");
  } catch (error) { fail(error.message); }
});
$("twofactor-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  try { await api("POST", "/v1/user/login/twofactor", { token: $("token").value }); show("keys"); }
  catch (error) { fail(error.message); }
});
$("create").addEventListener("click", async () => {
  try {
    const k = await api("POST", "/v1/keys/", {});
    $("created-id").textContent = k.accessKeyId; $("created-secret").textContent = k.secretKey; $("created").hidden = false;
    $("list-id").value = k.accessKeyId; $("list-secret").value = k.secretKey;
    await list();
  } catch (error) { fail(error.message); }
});
$("logout").addEventListener("click", async () => {
  await api("POST", "/v1/user/logout").catch(() => {});
  $("created").hidden = true; $("key-rows").textContent = ""; $("list-id").value = ""; $("list-secret").value = "";
  show("login");
});
$("list-form").addEventListener("submit", async (e) => { e.preventDefault(); try { await list(); } catch (error) { fail(error.message); } });
async function list() {
  const r = await api("GET", "/v1/keys/", undefined, { "x-access-key-id": $("list-id").value, "x-secret-key": $("list-secret").value });
  const rows = $("key-rows"); rows.textContent = "";
  for (const k of r.keys) {
    const tr = document.createElement("tr");
    for (const v of [k.accessKeyId, k.status, k.createdAt, k.lastUsedAt || "never"]) { const td = document.createElement("td"); td.textContent = v; tr.append(td); }
    const td = document.createElement("td"); const b = document.createElement("button"); b.textContent = "Delete";
    b.addEventListener("click", async () => {
      try {
        await api("DELETE", "/v1/keys/" + encodeURIComponent(k.accessKeyId));
        if (k.accessKeyId === $("list-id").value) { $("list-id").value = ""; $("list-secret").value = ""; tr.remove(); $("created").hidden = true; }
        else await list();
      } catch (error) { fail(error.message); }
    });
    td.append(b); tr.append(td); rows.append(tr);
  }
}
`;

export const PAGE_ASSETS: Record<string, { type: string; body: string }> = {
  "/index.html": { type: "html", body: INDEX },
  "/app.css": { type: "css", body: CSS },
  "/app.js": { type: "js", body: SCRIPT },
};
