// m4a daemon status|stop|restart|logs|install: the singleton daemon's lifecycle.
import { pathOf } from '../wire/operation-facts.js';
import type { Command } from 'commander';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { MailClient } from '../client/http-client.js';
import { dataDirFrom, daemonUrl, operatorToken } from './daemon-target.js';
import { CLI_MAIN, ensureDaemon, probe, readDaemonInfo } from './autostart.js';
import { CLI_VERSION } from './connect.js';
import { EXIT, fail, printJson } from './output.js';
import { table } from './format.js';

interface Common {
  json?: boolean;
  dataDir?: string;
}

async function waitGone(url: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!(await probe(url, 300))) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** After the port closes the process still finishes its shutdown; wait for it to be gone. */
async function waitExited(pid: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stopDaemon(dataDir: string): Promise<boolean> {
  const url = daemonUrl(dataDir);
  const h = await probe(url);
  if (!h) return false;
  const op = new MailClient({ url, token: operatorToken(dataDir) });
  try {
    await op.call(pathOf('daemon.stop'), { when: 'now' });
  } finally {
    op.close();
  }
  if (!(await waitGone(url, 10_000))) throw new Error(`the daemon at ${url} did not stop within 10 s`);
  await waitExited(h.pid, 5_000);
  return true;
}

export function registerDaemon(program: Command): void {
  const daemon = program.command('daemon').description('the background daemon: status, stop, restart, logs, install');
  const opts = (c: Command) => c.option('--json', 'JSON output').option('--data-dir <dir>', "the daemon's data directory");

  opts(daemon.command('status').description('is it running, where, which version')).action(async (o: Common) => {
    const dir = dataDirFrom(o.dataDir);
    const url = daemonUrl(dir);
    const h = await probe(url);
    const info = readDaemonInfo(dir);
    const out = {
      running: !!h,
      url,
      data_dir: dir,
      pid: h?.pid ?? null,
      version: h?.version ?? null,
      cli_version: CLI_VERSION,
      auto: info?.auto ?? null,
      started_at: info?.started_at ?? null,
    };
    if (o.json) printJson(out);
    else
      process.stdout.write(
        `${table([
          ['running', out.running ? 'yes' : 'no'],
          ['url', url],
          ['pid', String(out.pid ?? '-')],
          ['version', `${out.version ?? '-'} (cli ${CLI_VERSION})`],
          ['started', out.started_at ?? '-'],
          ['data', dir],
        ])}\n`,
      );
    process.exit(h ? EXIT.ok : EXIT.unreachable);
  });

  opts(daemon.command('stop').description('stop it (parked waits are answered, writes finish)')).action(async (o: Common) => {
    try {
      const stopped = await stopDaemon(dataDirFrom(o.dataDir));
      if (o.json) printJson({ stopped });
      else process.stdout.write(stopped ? 'stopped\n' : 'not running\n');
    } catch (err) {
      fail(err, !!o.json);
    }
  });

  opts(daemon.command('restart').description('stop it and start this version at once')).action(async (o: Common) => {
    try {
      const dir = dataDirFrom(o.dataDir);
      await stopDaemon(dir);
      const url = await ensureDaemon(dir);
      const h = await probe(url);
      if (o.json) printJson({ url, pid: h?.pid, version: h?.version });
      else process.stdout.write(`running ${h?.version} at ${url} (pid ${h?.pid})\n`);
    } catch (err) {
      fail(err, !!o.json);
    }
  });

  opts(daemon.command('logs').description("the auto-started daemon's log"))
    .option('-n, --lines <n>', 'last n lines', Number, 50)
    .action((o: Common & { lines: number }) => {
      const p = join(dataDirFrom(o.dataDir), 'daemon.log');
      if (!existsSync(p)) {
        process.stderr.write(`m4a: no log at ${p} (a daemon run with m4a serve logs to its terminal)\n`);
        process.exit(EXIT.failed);
      }
      const lines = readFileSync(p, 'utf8').trimEnd().split('\n');
      process.stdout.write(`${lines.slice(-o.lines).join('\n')}\n`);
    });

  opts(daemon.command('install').description('start the daemon at login (systemd user unit on Linux, launchd agent on macOS)')).action((o: Common) => {
    const dir = dataDirFrom(o.dataDir);
    const argv = [process.execPath, CLI_MAIN, 'serve', '--data-dir', dir];
    let path: string;
    let next: string;
    if (process.platform === 'darwin') {
      path = join(homedir(), 'Library', 'LaunchAgents', 'dev.mail4agent.daemon.plist');
      const args = argv.map((a) => `    <string>${a.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</string>`).join('\n');
      mkdirSync(join(homedir(), 'Library', 'LaunchAgents'), { recursive: true });
      writeFileSync(
        path,
        `<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0"><dict>\n  <key>Label</key><string>dev.mail4agent.daemon</string>\n  <key>ProgramArguments</key><array>\n${args}\n  </array>\n  <key>RunAtLoad</key><true/>\n  <key>KeepAlive</key><true/>\n  <key>StandardErrorPath</key><string>${join(dir, 'daemon.log')}</string>\n</dict></plist>\n`,
      );
      next = `launchctl load ${path}`;
    } else {
      const unitDir = join(process.env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'systemd', 'user');
      path = join(unitDir, 'mail4agent.service');
      mkdirSync(unitDir, { recursive: true });
      const quote = (a: string) => (/[\s"\\]/.test(a) ? `"${a.replace(/(["\\])/g, '\\$1')}"` : a);
      writeFileSync(
        path,
        `[Unit]\nDescription=mail4agent mailbox daemon\n\n[Service]\nExecStart=${argv.map(quote).join(' ')}\nRestart=on-failure\nKillSignal=SIGTERM\nTimeoutStopSec=15\n\n[Install]\nWantedBy=default.target\n`,
      );
      next = 'systemctl --user daemon-reload && systemctl --user enable --now mail4agent.service';
    }
    if (o.json) printJson({ path, next });
    else process.stdout.write(`wrote ${path}\nnow run: ${next}\n`);
  });
}
