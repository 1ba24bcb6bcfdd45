/** The page's style sheet: readable contrast, 44 px touch targets, and a table that turns into cards on a phone. */
export const APP_CSS = `
*, *::before, *::after { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; color: #1d232b; background: #fff; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
main:focus { outline: none; }
[hidden] { display: none !important; }
.top { display: flex; flex-wrap: wrap; gap: .5rem 1rem; justify-content: space-between; align-items: center;
  padding: .5rem 1rem; border-bottom: 1px solid #d0d5dc; background: #f6f8fa; }
.brand { font-weight: 600; margin: 0; }
#account-bar { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
#who { overflow-wrap: anywhere; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 1rem; top: 1rem; background: #fff; padding: .5rem; z-index: 1; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.25rem; margin-top: 2rem; } h3 { font-size: 1.05rem; margin-top: 1.5rem; }
h4 { font-size: 1rem; }
label { display: block; margin: .6rem 0 .2rem; font-weight: 500; }
.check label { display: inline; font-weight: 400; }
input { font: inherit; padding: .5rem .6rem; width: 100%; max-width: 28rem; min-height: 44px; border: 1px solid #6b7480; border-radius: 4px; }
input[type=checkbox] { width: 1.4rem; height: 1.4rem; min-height: 0; vertical-align: middle; }
button { font: inherit; min-height: 44px; min-width: 44px; padding: .45rem 1rem; margin: .5rem .5rem 0 0; cursor: pointer;
  border: 1px solid #5b6470; border-radius: 4px; background: #fff; color: #1d232b; }
button:disabled { cursor: not-allowed; color: #5b6470; background: #eef0f3; }
button.primary { background: #0b5cad; border-color: #0b5cad; color: #fff; }
button.primary:disabled { background: #6c8db0; border-color: #6c8db0; color: #fff; }
button.danger { background: #a3142a; border-color: #a3142a; color: #fff; }
button.danger:disabled { background: #b5737e; border-color: #b5737e; color: #fff; }
:focus-visible { outline: 3px solid #e08e00; outline-offset: 2px; }
.inline { display: flex; flex-wrap: wrap; align-items: flex-end; gap: 0 .5rem; }
.inline > div { flex: 1 1 16rem; }
table { border-collapse: collapse; width: 100%; margin-top: 1rem; }
th, td { text-align: left; padding: .5rem; border-bottom: 1px solid #d0d5dc; vertical-align: top; }
td button { margin: 0 .4rem .4rem 0; }
code { font-family: ui-monospace, monospace; background: #f2f4f7; padding: .1rem .3rem; overflow-wrap: anywhere; }
.secret { border: 2px solid #9a6100; background: #fff8e6; padding: 1rem; margin: 1rem 0; }
.danger-zone { border: 2px solid #a3142a; background: #fff5f6; padding: 1rem; margin: 1rem 0; }
dl { margin: .5rem 0; } dt { font-weight: 600; } dd { margin: 0 0 .5rem 0; }
.error { color: #a3142a; font-weight: 500; }
.error:empty { display: none; }
.muted { color: #4f5864; }
.badge { display: inline-block; padding: 0 .5rem; border-radius: 1rem; font-size: .9rem; border: 1px solid currentColor; }
.badge.active { color: #126b2f; } .badge.inactive { color: #4f5864; } .badge.rotate { color: #8a4b00; margin-left: .5rem; }
.plain { list-style: none; padding: 0; }
.plain li { padding: .5rem 0; border-bottom: 1px solid #e3e7ec; overflow-wrap: anywhere; }
#tf-qr { display: block; background: #fff; }
td code { white-space: nowrap; }
tr.dialog-row td { padding: 0; }
button.link { border: 0; background: none; color: #0b5cad; text-decoration: underline; padding: .45rem .25rem; margin: 0; }
.codes { font-family: ui-monospace, monospace; columns: 2; max-width: 24rem; padding-left: 2rem; }
.actions { display: flex; flex-wrap: wrap; }
@media (max-width: 640px) {
  main { padding: .75rem; }
  table, thead, tbody, tr, th, td { display: block; }
  thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  tr { border: 1px solid #d0d5dc; border-radius: 6px; margin-bottom: .75rem; padding: .25rem .5rem; }
  td { border: 0; padding: .25rem 0; }
  td::before { content: attr(data-label); display: block; font-size: .85rem; color: #4f5864; }
}
`;
