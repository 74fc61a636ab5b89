// Waking an idle Copilot CLI session (§11): an extension setup writes to
// `$COPILOT_HOME/extensions/mail4agent/extension.mjs` (Copilot runs it, with experimental features
// on, in a child of its own binary). It runs `m4a hook copilot-live --account NAME` again and again:
// one parked `notice {event: "live"}` (mail this session was not shown, after the loop guard), and
// each answer goes to the session as a prompt with `session.send` (an idle session starts a turn, a
// busy one gets it after the turn). The m4a child speaks as the Copilot session: attestation sees
// through the extension host to the copilot process. No secret in the file; the loop guard and the
// receipts are the daemon's, as for every wake.

/** The extension, for one hook command (argv, no shell). */
export function copilotExtensionSource(argv: string[]): string {
  return `// mail4agent: new mail becomes a prompt, also while this Copilot session is idle. Written by
// \`m4a setup copilot\`; \`m4a unsetup copilot\` removes it. No secret here: the command reads it
// from mail4agent's credentials file.
import { joinSession } from "@github/copilot-sdk/extension";
import { spawn } from "node:child_process";

const ARGV = ${JSON.stringify(argv)};
const session = await joinSession({});
let child = null;
let stopped = false;
session.on("session.shutdown", () => {
  stopped = true;
  child?.kill();
});

/** One parked wait: the wake text when mail came, else null. */
function wait() {
  return new Promise((resolve) => {
    let out = "";
    child = spawn(ARGV[0], ARGV.slice(1), { stdio: ["ignore", "pipe", "ignore"] });
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d) => (out += d));
    child.on("error", () => resolve({ ok: false }));
    child.on("close", (code) => {
      child = null;
      try {
        const text = JSON.parse(out || "{}").text;
        resolve({ ok: code === 0, text: typeof text === "string" && text ? text : null });
      } catch {
        resolve({ ok: false });
      }
    });
  });
}

let backoff = 1000;
while (!stopped) {
  const started = Date.now();
  const r = await wait();
  if (stopped) break;
  if (r.text) await session.send({ prompt: r.text }).catch(() => {});
  // A failing or instantly returning command is retried slower and slower (up to 30 s).
  const quick = !r.text && Date.now() - started < 1000;
  backoff = r.ok && !quick ? 1000 : Math.min(backoff * 2, 30000);
  if (!r.ok || quick) await new Promise((res) => setTimeout(res, backoff));
}
`;
}
