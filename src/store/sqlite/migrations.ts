import type Database from 'better-sqlite3';

// Numbered and append-only: never edit a shipped entry, add the next one. `PRAGMA user_version`
// records how many have run, so a database opened by an older build is brought forward in order.
export const MIGRATIONS: readonly string[] = [
  // 1: the initial schema.
  `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

  CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    label TEXT NOT NULL,
    perm_send INTEGER NOT NULL,
    perm_read INTEGER NOT NULL,
    perm_urgent INTEGER NOT NULL,
    perm_operator INTEGER NOT NULL,
    bind_provider TEXT,
    secret_digest TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX accounts_by_digest ON accounts(secret_digest);

  CREATE TABLE rooms (name TEXT PRIMARY KEY, created_at INTEGER NOT NULL) WITHOUT ROWID;
  -- acked: how many of the room's messages this member's account has acknowledged (unread counter).
  CREATE TABLE members (
    room TEXT NOT NULL,
    account TEXT NOT NULL,
    acked INTEGER NOT NULL,
    PRIMARY KEY (room, account)
  ) WITHOUT ROWID;
  CREATE INDEX members_by_account ON members(account, room);

  CREATE TABLE listeners (account TEXT PRIMARY KEY, url TEXT NOT NULL) WITHOUT ROWID;

  -- Keeps its rowid: it is the registration order that breaks createdAt ties.
  CREATE TABLE sessions (
    account TEXT NOT NULL,
    id TEXT NOT NULL,
    lineage TEXT NOT NULL,
    host_id TEXT NOT NULL,
    pid INTEGER NOT NULL,
    start_time INTEGER NOT NULL,
    exe TEXT NOT NULL,
    uid INTEGER NOT NULL,
    c_provider TEXT,
    c_provider_session_id TEXT,
    c_model TEXT,
    c_cwd TEXT,
    d_working_on TEXT,
    d_role TEXT,
    d_parent TEXT,
    created_at INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    ended_at INTEGER,
    successor TEXT,
    PRIMARY KEY (account, id)
  );
  CREATE INDEX sessions_by_provider ON sessions(account, c_provider, c_provider_session_id, created_at);
  CREATE INDEX sessions_by_end ON sessions(ended_at) WHERE ended_at IS NOT NULL;

  -- AUTOINCREMENT: a seq is never reused, so cursors stay valid for ever.
  CREATE TABLE messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    thread_id TEXT NOT NULL,
    from_account TEXT NOT NULL,
    from_session TEXT,
    from_kind TEXT NOT NULL,
    to_address TEXT NOT NULL,
    to_key TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    reply_to TEXT,
    correlation TEXT,
    refs TEXT NOT NULL,
    priority TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    idempotency_key TEXT,
    fingerprint TEXT
  );
  CREATE INDEX messages_by_key ON messages(to_key, seq);
  CREATE INDEX messages_by_thread ON messages(thread_id, seq);
  CREATE INDEX messages_by_idempotency ON messages(from_account, idempotency_key, seq)
    WHERE idempotency_key IS NOT NULL;

  -- to_key is kept so a rejoining member's acked count is one indexed COUNT.
  CREATE TABLE acks (
    ack_key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    to_key TEXT NOT NULL,
    acked_at INTEGER NOT NULL,
    PRIMARY KEY (ack_key, seq)
  ) WITHOUT ROWID;
  CREATE INDEX acks_by_to_key ON acks(ack_key, to_key);

  -- Every message of to_key with seq <= floor is acked under ack_key: pending scans start there.
  CREATE TABLE ack_floors (
    ack_key TEXT NOT NULL,
    to_key TEXT NOT NULL,
    floor INTEGER NOT NULL,
    PRIMARY KEY (ack_key, to_key)
  ) WITHOUT ROWID;

  -- Per mailbox key: messages ever delivered, and those not acked under the key itself
  -- (a: and s: mail). Rooms use total minus members.acked. Kept apart from rooms so a room
  -- removed and created again still counts the mail its key holds.
  CREATE TABLE mailbox_counts (
    to_key TEXT PRIMARY KEY,
    total INTEGER NOT NULL,
    unacked INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  // 2: friendly names of session lineages, and broadcast rooms.
  `
  -- One namespace per account: a lineage's slug and its aliases. A session's slug is read through
  -- its lineage, so a successor has it (and the aliases) without copying anything.
  CREATE TABLE names (
    account TEXT NOT NULL,
    name TEXT NOT NULL,
    lineage TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('slug', 'alias')),
    PRIMARY KEY (account, name)
  ) WITHOUT ROWID;
  CREATE INDEX names_by_lineage ON names(account, lineage, kind);

  -- A lineage's sessions, oldest first (the rowid breaks createdAt ties).
  CREATE INDEX sessions_by_lineage ON sessions(account, lineage, created_at);

  -- everyone: every account, present and future, is made a member.
  ALTER TABLE rooms ADD COLUMN everyone INTEGER NOT NULL DEFAULT 0;
  `,
  // 3: small durable documents beside the mail (wake chains and attempts, receipts, timers, web
  // logins); the engine owns the JSON in value.
  `
  CREATE TABLE records (
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
  ) WITHOUT ROWID;
  `,
  // 4: a name used again is a new participant; rooms are members-only unless open.
  // (Removing an account or room now deletes its mail: the note on mailbox_counts in 1 is history.)
  `
  -- The head seq when the account was created: mail from its id at or below it was sent by a
  -- removed account of the same name. Accounts from before this rule count from 0.
  ALTER TABLE accounts ADD COLUMN born_seq INTEGER NOT NULL DEFAULT 0;
  -- is_open: anyone may post into the room; otherwise only its members (existing rooms too).
  ALTER TABLE rooms ADD COLUMN is_open INTEGER NOT NULL DEFAULT 0;
  `,
  // 5: aliases are written with a leading @, so they never share a name with a slug (which never
  // starts with one). An old alias whose @-name is taken (by a slug from a directory named @…) goes.
  `
  UPDATE OR IGNORE names SET name = '@' || name WHERE kind = 'alias' AND substr(name, 1, 1) <> '@';
  DELETE FROM names WHERE kind = 'alias' AND substr(name, 1, 1) <> '@';
  `,
  // 6: tasks and approvals. A task lives in a thread of messages; the row is its current state.
  // refs, history and result are JSON text. Lists go newest change first (last_seq), id breaking
  // ties, so each list is one backward range of one index with no sort.
  `
  CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    from_account TEXT NOT NULL,
    from_session TEXT,
    from_address TEXT NOT NULL,
    to_account TEXT NOT NULL,
    to_lineage TEXT,
    to_address TEXT NOT NULL,
    title TEXT NOT NULL,
    instructions TEXT,
    refs TEXT NOT NULL,
    parent_task_id TEXT,
    state TEXT NOT NULL,
    history TEXT NOT NULL,
    result TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    idempotency_key TEXT
  );
  CREATE INDEX tasks_by_to ON tasks(to_account, last_seq, id);
  CREATE INDEX tasks_by_to_state ON tasks(to_account, state, last_seq, id);
  CREATE INDEX tasks_by_from ON tasks(from_account, last_seq, id);
  CREATE INDEX tasks_by_from_state ON tasks(from_account, state, last_seq, id);
  CREATE INDEX tasks_by_parent ON tasks(parent_task_id, created_at, id) WHERE parent_task_id IS NOT NULL;
  CREATE INDEX tasks_by_idempotency ON tasks(from_account, idempotency_key, created_at)
    WHERE idempotency_key IS NOT NULL;

  -- The mailbox records a decision and never acts on it.
  CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    requester_account TEXT NOT NULL,
    requester_session TEXT,
    requester_address TEXT NOT NULL,
    reviewer_account TEXT NOT NULL,
    action TEXT NOT NULL,
    details TEXT,
    task_id TEXT,
    state TEXT NOT NULL,
    reason TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    decided_at INTEGER
  );
  CREATE INDEX approvals_by_reviewer ON approvals(reviewer_account, created_at);
  `,
  // 7: a task's change message carries its structured part (task id, the state it entered, the
  // task's version) as JSON text; null for every other message, and for mail stored before.
  `
  ALTER TABLE messages ADD COLUMN task TEXT;
  `,
  // 8: leases (leases.ts) and pooled tasks. A lease row stays after it ended (ended_at, end_reason)
  // until the engine settled it and pruneLeases deleted it. Live = ended_at IS NULL AND expires_at
  // > now: the partial indexes hold only rows not ended. The epochs of (space, resource) live in
  // their own table, so a fencing token is never handed out twice, even after its rows are pruned.
  `
  CREATE TABLE leases (
    id TEXT PRIMARY KEY,
    space TEXT NOT NULL,
    resource TEXT NOT NULL,
    mode TEXT NOT NULL,
    holder_account TEXT NOT NULL,
    holder_session TEXT,
    holder_lineage TEXT,
    holder_address TEXT NOT NULL,
    reason TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    ended_at INTEGER,
    end_reason TEXT,
    settled INTEGER NOT NULL DEFAULT 0
  );
  -- A claim's conflicts and the lists by space; a holder's count and lists; the expiry sweep.
  CREATE INDEX leases_live_by_space ON leases(space, id) WHERE ended_at IS NULL;
  CREATE INDEX leases_live_by_holder ON leases(holder_account, holder_session, expires_at) WHERE ended_at IS NULL;
  CREATE INDEX leases_live_by_expiry ON leases(expires_at, id) WHERE ended_at IS NULL;
  -- Ends still to act on (oldest first), and settled ends to prune.
  CREATE INDEX leases_unsettled ON leases(ended_at, id) WHERE ended_at IS NOT NULL AND settled = 0;
  CREATE INDEX leases_settled_by_end ON leases(ended_at) WHERE settled = 1;

  CREATE TABLE lease_epochs (
    space TEXT NOT NULL,
    resource TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    PRIMARY KEY (space, resource)
  ) WITHOUT ROWID;

  -- A pooled task's claim state (null for a task with a named assignee) and why the mailbox failed
  -- a task (lease_exhausted). poolTasks: the offer (unclaimed, oldest created first) and the
  -- pool's list (newest change first), each one range of an index.
  ALTER TABLE tasks ADD COLUMN pool_room TEXT;
  ALTER TABLE tasks ADD COLUMN pool_attempt INTEGER;
  ALTER TABLE tasks ADD COLUMN pool_max_attempts INTEGER;
  ALTER TABLE tasks ADD COLUMN pool_retry_delay_secs INTEGER;
  ALTER TABLE tasks ADD COLUMN pool_available_at INTEGER;
  ALTER TABLE tasks ADD COLUMN pool_lease_id TEXT;
  ALTER TABLE tasks ADD COLUMN pool_lease_epoch INTEGER;
  ALTER TABLE tasks ADD COLUMN fail_reason TEXT;
  CREATE INDEX tasks_by_pool_offer ON tasks(pool_room, state, created_at, id) WHERE pool_room IS NOT NULL;
  CREATE INDEX tasks_by_pool ON tasks(pool_room, last_seq, id) WHERE pool_room IS NOT NULL;
  `,
  // 9: teams and contact policies (teams.ts, contacts.ts). A team is a room with team = 1; its
  // roles live on the membership rows, so ending a membership ends the leadership with it. Grants
  // are a sorted JSON array on the row rather than a child table: there are two capabilities, they
  // are always read with the leader, and a child table would need its own delete on every path that
  // ends a membership. team_changes: AUTOINCREMENT so an id is never handed out again, even after
  // the room's rows were deleted. contacts: both directions go with either account
  // (contacts_by_contact finds the other direction).
  `
  ALTER TABLE rooms ADD COLUMN team INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE members ADD COLUMN leader INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE members ADD COLUMN grants TEXT NOT NULL DEFAULT '[]';
  ALTER TABLE accounts ADD COLUMN contact_policy TEXT NOT NULL DEFAULT 'open';

  CREATE TABLE team_changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    room TEXT NOT NULL,
    at INTEGER NOT NULL,
    by_account TEXT NOT NULL,
    action TEXT NOT NULL,
    account TEXT,
    capability TEXT
  );
  CREATE INDEX team_changes_by_room ON team_changes(room, id);

  CREATE TABLE contacts (
    account TEXT NOT NULL,
    contact TEXT NOT NULL,
    added_at INTEGER NOT NULL,
    PRIMARY KEY (account, contact)
  ) WITHOUT ROWID;
  CREATE INDEX contacts_by_contact ON contacts(contact, account);
  `,
  // 10: full-text search (search-rules.ts). An external-content FTS5 table over the messages' subject
  // and body (rowid = seq, the text is not stored twice), kept by triggers in the transaction of
  // every write to messages, so appends, account and room removal and pruning keep it right without
  // knowing of it. unicode61 without diacritic folding: words are runs of letters and digits in
  // lower case, as wire/search.ts and PostgreSQL's index cut them (trigram would find substrings
  // PostgreSQL's words cannot, and triples the index). prefix='2 3': a 2- or 3-character prefix
  // (the shortest a query may have) is one entry of a prefix index, not a merge of every word that
  // starts so. The rebuild indexes the mail stored before.
  `
  CREATE VIRTUAL TABLE messages_fts USING fts5(subject, body, content='messages', content_rowid='seq', tokenize='unicode61 remove_diacritics 0', prefix='2 3');
  CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, subject, body) VALUES (new.seq, new.subject, new.body);
  END;
  CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, subject, body) VALUES ('delete', old.seq, old.subject, old.body);
  END;
  CREATE TRIGGER messages_fts_update AFTER UPDATE OF subject, body ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, subject, body) VALUES ('delete', old.seq, old.subject, old.body);
    INSERT INTO messages_fts(rowid, subject, body) VALUES (new.seq, new.subject, new.body);
  END;
  INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
  `,
  // 11: mail from outside (the SMTP door, issue #19) is capped per account; the cap's count reads
  // only such mail, however much other mail the account holds.
  `
  CREATE INDEX messages_external ON messages(to_key, seq) WHERE from_kind = 'external';
  `,
  // 12: mail a person's delegate wrote through a relay (issue #20) names the relay and the
  // delegate (MessageVia) as JSON text; null for every other message.
  `
  ALTER TABLE messages ADD COLUMN via TEXT;
  `,
];

export function migrate(db: Database.Database): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`database schema version ${current} is newer than this build (${MIGRATIONS.length})`);
  }
  for (let v = current; v < MIGRATIONS.length; v++) {
    const sql = MIGRATIONS[v] as string;
    db.transaction(() => {
      db.exec(sql);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
