// Full-size and quick (--quick) sizes. The figures in docs/benchmarks.md come from full-size runs.
// A quick run is mostly the start-up of its ~40 child processes: one concurrency point per system,
// small mailboxes, a few hundred requests per figure.
export interface Sizes {
  throughputMs: number;
  concurrencies: number[];
  /** Messages stored before each latency measurement. */
  mailboxSizes: number[];
  latencyCount: number;
  wakeRounds: number;
  fanoutReaders: number;
  fanoutRounds: number;
  fanoutSettleMs: number;
  waiterAccounts: number;
  waitersPerAccount: number;
  waiterSends: number;
  waiterParkCapMs: number;
  coldRuns: number;
  mcpCalls: number;
  profileMs: number;
  durabilityMs: number;
  /** Idle connections the hostile holder keeps open, and /health requests timed before and during. */
  floodConnections: number;
  floodHealthRequests: number;
  /** Sequential claim/release cycles (each beside a send and an ack), claimants per burst, bursts, pooled tasks per pool burst. */
  leaseRoundTrips: number;
  leaseClaimants: number;
  leaseBursts: number;
  leasePoolTasks: number;
  /** Rounds of the cross-daemon wake on PostgreSQL (each variant, and the raw LISTEN/NOTIFY beside it). */
  pgWakeRounds: number;
  /** Scenario 15: a team's members besides the sender, and interleaved rounds of its five sends. */
  teamMembers: number;
  teamRounds: number;
}

export const FULL: Sizes = {
  throughputMs: 10_000,
  concurrencies: [1, 8, 64],
  mailboxSizes: [0, 100_000, 1_000_000],
  latencyCount: 3000,
  wakeRounds: 1000,
  fanoutReaders: 1000,
  fanoutRounds: 10,
  fanoutSettleMs: 400,
  waiterAccounts: 1250,
  waitersPerAccount: 8,
  waiterSends: 1000,
  waiterParkCapMs: 150_000,
  coldRuns: 30,
  mcpCalls: 2000,
  profileMs: 8000,
  durabilityMs: 2000,
  floodConnections: 3000,
  floodHealthRequests: 500,
  leaseRoundTrips: 3000,
  leaseClaimants: 1000,
  leaseBursts: 5,
  leasePoolTasks: 10,
  pgWakeRounds: 500,
  teamMembers: 50,
  teamRounds: 500,
};

export const QUICK: Sizes = {
  throughputMs: 700,
  concurrencies: [64],
  mailboxSizes: [0, 5_000, 20_000],
  latencyCount: 200,
  wakeRounds: 100,
  fanoutReaders: 100,
  fanoutRounds: 3,
  fanoutSettleMs: 50,
  waiterAccounts: 31,
  waitersPerAccount: 8,
  waiterSends: 100,
  waiterParkCapMs: 15_000,
  coldRuns: 4,
  mcpCalls: 200,
  profileMs: 1000,
  durabilityMs: 300,
  floodConnections: 3000,
  floodHealthRequests: 100,
  leaseRoundTrips: 200,
  leaseClaimants: 100,
  leaseBursts: 2,
  leasePoolTasks: 10,
  pgWakeRounds: 100,
  teamMembers: 20,
  teamRounds: 60,
};
