/** The page's one document: landmarks, a labelled control for everything, no inline script or style. */
export const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lightfleet API keys</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/app.css">
<script type="module" src="/app.js"></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <p class="brand">lightfleet API keys</p>
  <nav id="account-bar" aria-label="Account" hidden>
    <span id="who"></span>
    <button type="button" id="logout">Log out</button>
  </nav>
</header>
<main id="main" tabindex="-1">
  <p id="error" class="error" role="alert"></p>
  <p id="status" class="visually-hidden" role="status" aria-live="polite"></p>

  <section id="login" aria-labelledby="login-title" hidden>
    <h1 id="login-title" tabindex="-1">Log in</h1>
    <form id="login-form">
      <label for="email">Email</label>
      <input id="email" name="email" type="email" autocomplete="username" required>
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required>
      <button type="submit" class="primary">Log in</button>
    </form>
  </section>

  <section id="twofactor" aria-labelledby="twofactor-title" hidden>
    <h1 id="twofactor-title" tabindex="-1">Two-factor code</h1>
    <form id="twofactor-form">
      <div id="token-field">
        <label for="token">Code from your authenticator app</label>
        <input id="token" name="token" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
      </div>
      <div id="recovery-field" hidden>
        <label for="recovery-code">One of your recovery codes</label>
        <input id="recovery-code" name="recovery-code" autocomplete="off" spellcheck="false" maxlength="20" disabled required>
      </div>
      <div class="actions">
        <button type="submit" class="primary">Verify</button>
        <button type="button" id="twofactor-back">Back</button>
      </div>
    </form>
    <p id="twofactor-help" class="muted">Lost your authenticator? <button type="button" id="twofactor-use-recovery" class="link">Use a recovery code</button>
      (you were given ten when you turned two-factor authentication on). Without one, an operator can turn it off for you.</p>
    <p id="twofactor-code-help" class="muted" hidden><button type="button" id="twofactor-use-code" class="link">Use a code from the app instead</button></p>
  </section>

  <div id="app" hidden>
    <section id="keys" aria-labelledby="keys-title">
      <h1 id="keys-title" tabindex="-1">Access keys</h1>
      <p id="quota" class="muted"></p>
      <form id="create-form" class="inline">
        <div>
          <label for="key-name">Name (optional)</label>
          <input id="key-name" maxlength="64" autocomplete="off" placeholder="e.g. indexer production">
        </div>
        <button type="submit" id="create" class="primary">Create access key</button>
      </form>

      <div id="created" class="secret" role="group" aria-labelledby="created-title" hidden>
        <h2 id="created-title" tabindex="-1">Save your secret access key</h2>
        <p>This is the only time the secret access key can be seen. Copy or download it now; if it is lost, delete the key and create a new one.</p>
        <dl>
          <dt>Access key id</dt><dd><code id="created-id"></code></dd>
          <dt>Secret access key</dt><dd><code id="created-secret"></code></dd>
        </dl>
        <div class="buttons">
          <button type="button" id="copy-id">Copy id</button>
          <button type="button" id="copy-secret">Copy secret</button>
          <button type="button" id="download">Download .csv</button>
        </div>
        <p class="check"><input type="checkbox" id="saved"> <label for="saved">I have saved the secret access key</label></p>
        <button type="button" id="done" class="primary" disabled>Done</button>
      </div>

      <div id="delete-dialog" class="danger-zone" role="group" aria-labelledby="delete-title" hidden>
        <h2 id="delete-title" tabindex="-1">Delete access key</h2>
        <p>Deleting <code id="delete-id"></code> is permanent: calls that authenticate with it fail from then on. Type the access key id to confirm.</p>
        <p id="delete-active" class="error" hidden>This key is Active: anything still using it stops working at once.</p>
        <label for="delete-confirm">Access key id</label>
        <input id="delete-confirm" autocomplete="off" spellcheck="false">
        <div class="buttons">
          <button type="button" id="delete-go" class="danger" disabled>Delete</button>
          <button type="button" id="delete-cancel">Cancel</button>
        </div>
      </div>

      <div id="rotate-reminder" class="secret" role="note" hidden></div>
      <table id="key-table">
        <caption class="visually-hidden">Your access keys</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">Access key id</th><th scope="col">Status</th><th scope="col">Age</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead>
        <tbody id="key-rows"></tbody>
      </table>
      <p id="no-keys" class="muted" hidden>No access keys yet.</p>
    </section>

    <section id="security" aria-labelledby="security-title">
      <h2 id="security-title" tabindex="-1">Security</h2>
      <h3>Two-factor authentication</h3>
      <p id="tf-state"></p>
      <button type="button" id="tf-start" aria-expanded="false" aria-controls="tf-auth" hidden>Set up two-factor authentication</button>
      <div id="tf-auth" role="group" aria-labelledby="tf-auth-title" hidden>
        <h4 id="tf-auth-title">Confirm it is you</h4>
        <p>Turning two-factor authentication on ends your other sessions.</p>
        <form id="tf-auth-form">
          <label for="tf-auth-password">Current password</label>
          <input id="tf-auth-password" type="password" autocomplete="current-password" required>
          <div class="actions">
            <button type="submit" id="tf-auth-go" class="primary">Continue</button>
            <button type="button" id="tf-auth-cancel">Cancel</button>
          </div>
        </form>
      </div>
      <div id="tf-recovery" role="group" aria-labelledby="tf-recovery-title" hidden>
        <h4 id="tf-recovery-title" tabindex="-1">Save your recovery codes</h4>
        <p>Each code logs you in once if you lose your authenticator. They are shown only now.</p>
        <ul id="tf-recovery-codes" class="codes"></ul>
        <button type="button" id="tf-recovery-done" class="primary">I have saved the recovery codes</button>
      </div>
      <div id="tf-setup" hidden>
        <h4 id="tf-setup-title" tabindex="-1">Scan the QR code with your authenticator app</h4>
        <img id="tf-qr" alt="QR code with the two-factor secret" width="200" height="200">
        <p>Or enter this key by hand: <code id="tf-secret"></code></p>
        <form id="tf-confirm-form">
          <label for="tf-code">Code the app shows</label>
          <input id="tf-code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
          <div class="actions">
            <button type="submit" class="primary">Turn on two-factor authentication</button>
            <button type="button" id="tf-setup-cancel">Cancel</button>
          </div>
        </form>
      </div>
      <button type="button" id="tf-off-start" aria-expanded="false" aria-controls="tf-off" hidden>Turn off two-factor</button>
      <div id="tf-off" class="danger-zone" role="group" aria-labelledby="tf-off-title" hidden>
        <h4 id="tf-off-title" tabindex="-1">Turn off two-factor authentication?</h4>
        <p>Logins will then ask only for your password, and every other session of this account ends. Confirm with your password and a code from your authenticator app.</p>
        <p id="tf-off-error" class="error" role="alert"></p>
        <form id="tf-off-form">
          <label for="tf-off-password">Current password</label>
          <input id="tf-off-password" type="password" autocomplete="current-password" required>
          <label for="tf-off-code">Code the app shows</label>
          <input id="tf-off-code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
          <div class="buttons">
            <button type="submit" id="tf-off-go" class="danger">Turn off two-factor authentication</button>
            <button type="button" id="tf-off-cancel">Cancel</button>
          </div>
        </form>
      </div>

      <h3>Password</h3>
      <form id="password-form">
        <label for="pw-current">Current password</label>
        <input id="pw-current" type="password" autocomplete="current-password" required>
        <label for="pw-new">New password (at least 12 characters)</label>
        <input id="pw-new" type="password" autocomplete="new-password" minlength="12" required>
        <button type="submit">Change password</button>
      </form>
    </section>

    <section id="sessions" aria-labelledby="sessions-title">
      <h2 id="sessions-title">Sessions</h2>
      <ul id="session-list" class="plain"></ul>
    </section>

    <section id="activity" aria-labelledby="activity-title">
      <h2 id="activity-title">Recent activity</h2>
      <ol id="audit-list" class="plain"></ol>
    </section>
  </div>
</main>
</body>
</html>
`;
