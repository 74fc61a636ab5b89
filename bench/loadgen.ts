// The load generator: its own process, so the daemon's CPU and memory are the daemon's. Takes one
// JSON spec as its argument, prints one JSON result line on stdout; progress goes to stderr.
import { runFixed, type FixedSpec } from './loadgen/fixed.js';
import { runWake, type WakeSpec } from './loadgen/wake.js';
import { runFanout, type FanoutSpec } from './loadgen/fanout.js';
import { runWaiters, type WaitersSpec } from './loadgen/waiters.js';
import { runMcpStdio, type McpStdioSpec } from './loadgen/mcp-stdio.js';
import { runSoak, type SoakSpec } from './loadgen/soak.js';
import { runLeaseBurst, runLeaseRtt, type LeaseBurstSpec, type LeaseRttSpec } from './loadgen/leases.js';
import { runStreamFixed, type StreamFixedSpec } from './loadgen/stream.js';
import { runStreamWake, type StreamWakeSpec } from './loadgen/stream-wake.js';
import { runStreamFanout, type StreamFanoutSpec } from './loadgen/stream-fanout.js';
import { runTeamRtt, type TeamRttSpec } from './loadgen/teams.js';
import { finish, readSpec } from './lib/spec.js';

type Spec =
  FixedSpec | WakeSpec | FanoutSpec | WaitersSpec | McpStdioSpec | SoakSpec | LeaseRttSpec | LeaseBurstSpec | StreamFixedSpec | StreamWakeSpec | StreamFanoutSpec | TeamRttSpec;

function run(spec: Spec): Promise<unknown> {
  switch (spec.mode) {
    case 'fixed':
      return runFixed(spec);
    case 'wake':
      return runWake(spec);
    case 'fanout':
      return runFanout(spec);
    case 'waiters':
      return runWaiters(spec);
    case 'mcp-stdio':
      return runMcpStdio(spec);
    case 'soak':
      return runSoak(spec);
    case 'lease-rtt':
      return runLeaseRtt(spec);
    case 'lease-burst':
      return runLeaseBurst(spec);
    case 'stream-fixed':
      return runStreamFixed(spec);
    case 'stream-wake':
      return runStreamWake(spec);
    case 'stream-fanout':
      return runStreamFanout(spec);
    case 'team-rtt':
      return runTeamRtt(spec);
    default:
      return Promise.reject(new Error(`unknown mode ${(spec as { mode: string }).mode}`));
  }
}

finish(run(readSpec<Spec>()));
