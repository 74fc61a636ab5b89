// The stylesheet: system fonts, light and dark, readable at 375 px, visible focus, AA contrast.
export const APP_CSS = `
:root { --bg: #f7f7f5; --fg: #1b1b1b; --muted: #545454; --card: #fff; --line: #d4d4d0; --accent: #0b57d0; --accent-fg: #fff;
  --unread: #0b57d0; --danger: #a50e0e; --att: #0d652d; --cor: #8a5300; --dec: #5b3fa0; --focus: #e8710a; color-scheme: light dark; }
@media (prefers-color-scheme: dark) { :root { --bg: #151515; --fg: #ececec; --muted: #b0b0b0; --card: #1f1f1f; --line: #3a3a3a;
  --accent: #8ab4f8; --accent-fg: #111; --unread: #8ab4f8; --danger: #f28b82; --att: #81c995; --cor: #fdd663; --dec: #c5a3ff; } }
* { box-sizing: border-box; }
html { font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
body { margin: 0; }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.skip { position: absolute; left: -999px; top: 0; background: var(--card); padding: .5rem; z-index: 2; }
.skip:focus { left: .5rem; }
.top { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1rem; padding: .5rem 1rem; background: var(--card); border-bottom: 1px solid var(--line); }
.brand { font-weight: 700; text-decoration: none; color: var(--fg); }
#nav { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1rem; flex: 1; }
.links { display: flex; flex-wrap: wrap; gap: .25rem; list-style: none; margin: 0; padding: 0; }
.links a { display: inline-block; padding: .35rem .6rem; border-radius: .4rem; text-decoration: none; }
.links a[aria-current="page"] { background: var(--accent); color: var(--accent-fg); }
.count:not(:empty) { margin-left: .35rem; padding: 0 .4rem; border-radius: 1rem; background: var(--danger); color: var(--bg); font-size: .8rem; }
.who { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem; margin-left: auto; }
#login-throttle { flex-basis: 100%; }
#login-throttle:empty { display: none; }
.me { color: var(--muted); font-size: .9rem; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.5rem; margin: .5rem 0 1rem; overflow-wrap: anywhere; }
h1:focus { outline: none; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
h3 { font-size: 1.05rem; margin: 0 0 .5rem; display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: .5rem; padding: 1rem; margin: 0 0 1rem; }
.narrow { max-width: 24rem; }
.field { margin: 0 0 .9rem; }
label { display: block; font-weight: 600; margin-bottom: .25rem; }
label.check { display: inline-flex; gap: .4rem; align-items: center; font-weight: 400; }
input:not([type=checkbox]), textarea, select { width: 100%; font: inherit; padding: .5rem; border: 1px solid var(--muted); border-radius: .35rem; background: var(--bg); color: var(--fg); }
textarea { resize: vertical; }
button, .button { font: inherit; padding: .45rem .9rem; border-radius: .35rem; border: 1px solid var(--accent); background: var(--accent); color: var(--accent-fg); cursor: pointer; text-decoration: none; display: inline-block; }
button.secondary { background: transparent; color: var(--accent); }
button.danger { background: transparent; color: var(--danger); border-color: var(--danger); }
button.small { padding: .1rem .5rem; font-size: .85rem; }
button:disabled { opacity: .6; cursor: not-allowed; }
.hint { color: var(--muted); font-size: .9rem; margin: .25rem 0 .75rem; }
.error { color: var(--danger); font-weight: 600; }
.notice { border-left: 4px solid var(--accent); padding: .25rem .75rem; }
.toolbar { display: flex; flex-wrap: wrap; gap: .75rem; align-items: center; justify-content: space-between; }
.msglist { list-style: none; margin: 0; padding: 0; }
.msg { display: flex; gap: .5rem; align-items: flex-start; border: 1px solid var(--line); border-radius: .5rem; background: var(--card); margin-bottom: .5rem; padding: .6rem .75rem; }
.msg .open { flex: 1; min-width: 0; color: inherit; text-decoration: none; display: block; }
.msg .open:hover .subject { text-decoration: underline; }
.msg.unread { border-left: 4px solid var(--unread); }
.msg.unread .subject { font-weight: 700; }
.line1 { display: flex; flex-wrap: wrap; gap: .25rem .5rem; align-items: center; font-size: .9rem; color: var(--muted); }
.line1 time { margin-left: auto; }
.dot { width: .6rem; height: .6rem; border-radius: 50%; background: var(--unread); display: inline-block; }
.from { font-weight: 600; color: var(--fg); overflow-wrap: anywhere; }
.to { overflow-wrap: anywhere; }
.subject { display: block; overflow-wrap: anywhere; }
.preview { display: block; color: var(--muted); font-size: .9rem; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.empty { color: var(--muted); padding: 1rem 0; }
.acked { color: var(--muted); font-size: .85rem; }
.badge { font-size: .75rem; padding: .05rem .45rem; border-radius: 1rem; border: 1px solid currentColor; font-weight: 600; white-space: nowrap; }
.kind-human { color: var(--dec); }
.kind-agent { color: var(--muted); }
.badge.urgent { color: var(--danger); }
.badge.unread { color: var(--unread); }
.badge.live { color: var(--att); }
.badge.ended { color: var(--muted); }
.message { background: var(--card); border: 1px solid var(--line); border-radius: .5rem; padding: .75rem 1rem; margin-bottom: .75rem; }
.message.mine { border-left: 4px solid var(--dec); }
.message.focus { box-shadow: 0 0 0 2px var(--accent); }
.message header { display: flex; flex-wrap: wrap; gap: .25rem .5rem; align-items: center; font-size: .9rem; color: var(--muted); }
.message header time { margin-left: auto; }
.body { white-space: pre-wrap; overflow-wrap: anywhere; margin-top: .5rem; font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: .92rem; }
a.ext::after { content: " \\2197"; }
.mono { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: .85rem; overflow-wrap: anywhere; }
.rooms { display: flex; flex-wrap: wrap; gap: .5rem 1rem; list-style: none; padding: 0; }
.rooms li { display: flex; gap: .4rem; align-items: center; }
.sessions { display: grid; gap: .75rem; }
.session { border: 1px solid var(--line); border-radius: .5rem; padding: .75rem; }
.session.ended { opacity: .75; }
.session h4 { margin: 0; display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
.meta { font-size: .85rem; color: var(--muted); margin: .25rem 0 .5rem; overflow-wrap: anywhere; }
.facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(14rem, 1fr)); gap: .5rem; margin-bottom: .5rem; }
.fact { border-top: 4px solid; padding: .4rem .6rem; background: var(--bg); border-radius: .25rem; }
.fact h5 { margin: 0; font-size: .95rem; }
.fact .why { margin: .1rem 0 .4rem; font-size: .8rem; color: var(--muted); }
.fact.attested { border-color: var(--att); } .fact.attested h5 { color: var(--att); }
.fact.corroborated { border-color: var(--cor); } .fact.corroborated h5 { color: var(--cor); }
.fact.declared { border-color: var(--dec); border-top-style: dashed; } .fact.declared h5 { color: var(--dec); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem .6rem; margin: 0; font-size: .85rem; }
dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
.none { color: var(--muted); font-size: .85rem; margin: 0; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(17rem, 1fr)); gap: 1rem; margin-top: 1rem; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; background: var(--card); }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); font-size: .9rem; }
.members { display: flex; flex-wrap: wrap; gap: .5rem 1rem; list-style: none; padding: 0; margin: 0; }
output.result { display: block; margin-top: .5rem; overflow-wrap: anywhere; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: .85rem; }
@media (max-width: 480px) { main { padding: .6rem; } #nav { flex-basis: 100%; } .who { margin-left: 0; } .msg { flex-direction: column; align-items: stretch; } .msg .open { width: 100%; } .line1 time { margin-left: 0; } }
`;
