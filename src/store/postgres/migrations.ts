// The PostgreSQL schema, numbered and append-only like the SQLite one: never edit a shipped entry,
// add the next one. `m4a_migrations` records which have run. Several daemons may start at once
// against the same schema, so migrate() runs under a transaction-level advisory lock keyed by the
// schema: the first to take it applies what is missing, the others then find nothing to do.
//
// Column names match the SQLite store's, so both stores share the row mappings (../sqlite/rows.ts).
// Every key column uses COLLATE "C": byte order of UTF-8, which is code point order, as SQLite's
// BINARY order is (ids, names and prefixes sort identically in both stores).
import type { Sql } from 'postgres';

/** First key of the two-int advisory locks this store takes ('m4a' in ASCII). */
export const LOCK_NAMESPACE = 0x6d3461;
/** Second keys (besides the per-schema migration lock, which is hashtext of the schema). */
export const LOCKS = { registry: 1 } as const;

export const MIGRATIONS: readonly string[] = [
  // 1: the initial schema (SQLite migrations 1 and 2 together), plus what sharing needs:
  // message_head (the commit-order seq), hosts (liveness heartbeats), sessions.reg (registration order).
  `
  CREATE TABLE meta (key text COLLATE "C" PRIMARY KEY, value text NOT NULL);

  CREATE TABLE accounts (
    id text COLLATE "C" PRIMARY KEY,
    kind text NOT NULL,
    label text NOT NULL,
    perm_send integer NOT NULL,
    perm_read integer NOT NULL,
    perm_urgent integer NOT NULL,
    perm_operator integer NOT NULL,
    bind_provider text,
    secret_digest text NOT NULL,
    created_at bigint NOT NULL
  );
  CREATE INDEX accounts_by_digest ON accounts (secret_digest);

  CREATE TABLE rooms (
    name text COLLATE "C" PRIMARY KEY,
    created_at bigint NOT NULL,
    everyone integer NOT NULL DEFAULT 0
  );
  CREATE TABLE members (
    room text COLLATE "C" NOT NULL,
    account text COLLATE "C" NOT NULL,
    acked bigint NOT NULL,
    PRIMARY KEY (room, account)
  );
  CREATE INDEX members_by_account ON members (account, room);

  CREATE TABLE listeners (account text COLLATE "C" PRIMARY KEY, url text NOT NULL);

  CREATE TABLE sessions (
    reg bigserial NOT NULL UNIQUE,
    account text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    lineage text COLLATE "C" NOT NULL,
    host_id text COLLATE "C" NOT NULL,
    pid bigint NOT NULL,
    start_time bigint NOT NULL,
    exe text NOT NULL,
    uid bigint NOT NULL,
    c_provider text COLLATE "C",
    c_provider_session_id text COLLATE "C",
    c_model text,
    c_cwd text,
    d_working_on text,
    d_role text,
    d_parent text,
    created_at bigint NOT NULL,
    last_seen bigint NOT NULL,
    ended_at bigint,
    successor text COLLATE "C",
    PRIMARY KEY (account, id)
  );
  CREATE INDEX sessions_by_provider ON sessions (account, c_provider, c_provider_session_id, created_at);
  CREATE INDEX sessions_by_end ON sessions (ended_at) WHERE ended_at IS NOT NULL;
  CREATE INDEX sessions_by_lineage ON sessions (account, lineage, created_at);
  CREATE INDEX sessions_by_host ON sessions (host_id);

  CREATE TABLE names (
    account text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    lineage text COLLATE "C" NOT NULL,
    kind text NOT NULL CHECK (kind IN ('slug', 'alias')),
    PRIMARY KEY (account, name)
  );
  CREATE INDEX names_by_lineage ON names (account, lineage, kind);

  -- The highest committed seq. An append batch locks this row first and assigns its seqs from it,
  -- so seqs are handed out in commit order with no gaps (see postgres-store.ts, "Sequence").
  CREATE TABLE message_head (one integer PRIMARY KEY CHECK (one = 1), seq bigint NOT NULL);
  INSERT INTO message_head (one, seq) VALUES (1, 0);

  CREATE TABLE messages (
    seq bigint PRIMARY KEY,
    id text COLLATE "C" NOT NULL UNIQUE,
    thread_id text COLLATE "C" NOT NULL,
    from_account text COLLATE "C" NOT NULL,
    from_session text,
    from_kind text NOT NULL,
    to_address text NOT NULL,
    to_key text COLLATE "C" NOT NULL,
    subject text NOT NULL,
    body text NOT NULL,
    reply_to text,
    correlation text,
    refs text NOT NULL,
    priority text NOT NULL,
    created_at bigint NOT NULL,
    idempotency_key text COLLATE "C",
    fingerprint text
  );
  CREATE INDEX messages_by_key ON messages (to_key, seq);
  CREATE INDEX messages_by_thread ON messages (thread_id, seq);
  CREATE INDEX messages_by_idempotency ON messages (from_account, idempotency_key, seq)
    WHERE idempotency_key IS NOT NULL;

  CREATE TABLE acks (
    ack_key text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    to_key text COLLATE "C" NOT NULL,
    acked_at bigint NOT NULL,
    PRIMARY KEY (ack_key, seq)
  );
  CREATE INDEX acks_by_to_key ON acks (ack_key, to_key);

  CREATE TABLE ack_floors (
    ack_key text COLLATE "C" NOT NULL,
    to_key text COLLATE "C" NOT NULL,
    floor bigint NOT NULL,
    PRIMARY KEY (ack_key, to_key)
  );

  CREATE TABLE mailbox_counts (
    to_key text COLLATE "C" PRIMARY KEY,
    total bigint NOT NULL,
    unacked bigint NOT NULL
  );

  -- One row per daemon host: refreshed by its daemon; once expires_at (database clock, ms) has
  -- passed, the host's sessions read as ended at expires_at (until the host comes back).
  CREATE TABLE hosts (
    host_id text COLLATE "C" PRIMARY KEY,
    boot_id text,
    started_at bigint NOT NULL,
    last_seen bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  `,
  // 2: small durable documents beside the mail (SQLite migration 3).
  `
  CREATE TABLE records (
    kind text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    value text NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (kind, id)
  );
  `,
  // 3: a name used again is a new participant (accounts.born_seq), members-only rooms unless open
  // (SQLite migration 4).
  `
  ALTER TABLE accounts ADD COLUMN born_seq bigint NOT NULL DEFAULT 0;
  ALTER TABLE rooms ADD COLUMN is_open integer NOT NULL DEFAULT 0;
  `,
  // 4: aliases written with a leading @ (SQLite migration 5).
  `
  UPDATE names SET name = '@' || name WHERE kind = 'alias' AND left(name, 1) <> '@'
    AND NOT EXISTS (SELECT 1 FROM names AS n WHERE n.account = names.account AND n.name = '@' || names.name);
  DELETE FROM names WHERE kind = 'alias' AND left(name, 1) <> '@';
  `,
  // 5: tasks and approvals (SQLite migration 6). refs, history and result are JSON as text, not
  // jsonb: jsonb would reorder keys, drop duplicates and refuse \u0000, and every store must give
  // back what it was given.
  `
  CREATE TABLE tasks (
    id text COLLATE "C" PRIMARY KEY,
    thread_id text COLLATE "C" NOT NULL,
    from_account text COLLATE "C" NOT NULL,
    from_session text COLLATE "C",
    from_address text NOT NULL,
    to_account text COLLATE "C" NOT NULL,
    to_lineage text COLLATE "C",
    to_address text NOT NULL,
    title text NOT NULL,
    instructions text,
    refs text NOT NULL,
    parent_task_id text COLLATE "C",
    state text COLLATE "C" NOT NULL,
    history text NOT NULL,
    result text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    version integer NOT NULL,
    last_seq bigint NOT NULL,
    idempotency_key text COLLATE "C"
  );
  CREATE INDEX tasks_by_to ON tasks (to_account, last_seq, id);
  CREATE INDEX tasks_by_to_state ON tasks (to_account, state, last_seq, id);
  CREATE INDEX tasks_by_from ON tasks (from_account, last_seq, id);
  CREATE INDEX tasks_by_from_state ON tasks (from_account, state, last_seq, id);
  CREATE INDEX tasks_by_parent ON tasks (parent_task_id, created_at, id) WHERE parent_task_id IS NOT NULL;
  CREATE INDEX tasks_by_idempotency ON tasks (from_account, idempotency_key, created_at)
    WHERE idempotency_key IS NOT NULL;

  CREATE TABLE approvals (
    id text COLLATE "C" PRIMARY KEY,
    thread_id text COLLATE "C" NOT NULL,
    requester_account text COLLATE "C" NOT NULL,
    requester_session text COLLATE "C",
    requester_address text NOT NULL,
    reviewer_account text COLLATE "C" NOT NULL,
    action text NOT NULL,
    details text,
    task_id text COLLATE "C",
    state text NOT NULL,
    reason text,
    created_at bigint NOT NULL,
    expires_at bigint,
    decided_at bigint
  );
  CREATE INDEX approvals_by_reviewer ON approvals (reviewer_account, created_at);
  `,
  // 6: a task's change message carries its structured part as JSON text (SQLite migration 7);
  // null for every other message.
  `
  ALTER TABLE messages ADD COLUMN task text;
  `,
  // 7: leases (leases.ts) and pooled tasks. A lease row stays after it ended (ended_at, end_reason)
  // until the engine settled it and pruneLeases deleted it; the epochs of (space, resource) live in
  // their own table, so a fencing token is never handed out twice even after its rows are pruned.
  // Live = ended_at IS NULL AND expires_at > now: the partial indexes cover the not-ended rows.
  `
  CREATE TABLE leases (
    id text COLLATE "C" PRIMARY KEY,
    space text COLLATE "C" NOT NULL,
    resource text COLLATE "C" NOT NULL,
    mode text NOT NULL CHECK (mode IN ('exclusive', 'shared')),
    holder_account text COLLATE "C" NOT NULL,
    holder_session text COLLATE "C",
    holder_lineage text COLLATE "C",
    holder_address text NOT NULL,
    reason text,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    epoch bigint NOT NULL,
    attempt integer NOT NULL,
    ended_at bigint,
    end_reason text,
    settled integer NOT NULL DEFAULT 0
  );
  CREATE INDEX leases_live_by_space ON leases (space, id) WHERE ended_at IS NULL;
  CREATE INDEX leases_live_by_holder ON leases (holder_account, holder_session, expires_at) WHERE ended_at IS NULL;
  CREATE INDEX leases_live_by_expiry ON leases (expires_at, id) WHERE ended_at IS NULL;
  -- A renew asks whether the space was claimed since its lease expired (leases.ts).
  CREATE INDEX leases_by_space_created ON leases (space, created_at);
  CREATE INDEX leases_unsettled ON leases (ended_at, id) WHERE ended_at IS NOT NULL AND settled = 0;
  CREATE INDEX leases_settled_by_end ON leases (ended_at) WHERE settled = 1;

  CREATE TABLE lease_epochs (
    space text COLLATE "C" NOT NULL,
    resource text COLLATE "C" NOT NULL,
    epoch bigint NOT NULL,
    PRIMARY KEY (space, resource)
  );

  ALTER TABLE tasks ADD COLUMN pool_room text COLLATE "C";
  ALTER TABLE tasks ADD COLUMN pool_attempt integer;
  ALTER TABLE tasks ADD COLUMN pool_max_attempts integer;
  ALTER TABLE tasks ADD COLUMN pool_retry_delay_secs integer;
  ALTER TABLE tasks ADD COLUMN pool_available_at bigint;
  ALTER TABLE tasks ADD COLUMN pool_lease_id text COLLATE "C";
  ALTER TABLE tasks ADD COLUMN pool_lease_epoch bigint;
  ALTER TABLE tasks ADD COLUMN fail_reason text COLLATE "C";
  -- poolTasks: the offer (unclaimed, oldest first) and the pool's list (newest change first).
  CREATE INDEX tasks_by_pool_offer ON tasks (pool_room, state, created_at, id) WHERE pool_room IS NOT NULL;
  CREATE INDEX tasks_by_pool ON tasks (pool_room, last_seq, id) WHERE pool_room IS NOT NULL;
  `,
  // 9: teams and contact policies, as SQLite migration 9 (grants: the same sorted JSON text, so
  // migrate-store copies the rows as they are). team_changes.id is a bigserial: increasing in the
  // order ids were taken, never handed out again.
  `
  ALTER TABLE rooms ADD COLUMN team integer NOT NULL DEFAULT 0;
  ALTER TABLE members ADD COLUMN leader integer NOT NULL DEFAULT 0;
  ALTER TABLE members ADD COLUMN grants text NOT NULL DEFAULT '[]';
  ALTER TABLE accounts ADD COLUMN contact_policy text NOT NULL DEFAULT 'open';

  CREATE TABLE team_changes (
    id bigserial PRIMARY KEY,
    room text COLLATE "C" NOT NULL,
    at bigint NOT NULL,
    by_account text COLLATE "C" NOT NULL,
    action text NOT NULL,
    account text COLLATE "C",
    capability text
  );
  CREATE INDEX team_changes_by_room ON team_changes (room, id);

  CREATE TABLE contacts (
    account text COLLATE "C" NOT NULL,
    contact text COLLATE "C" NOT NULL,
    added_at bigint NOT NULL,
    PRIMARY KEY (account, contact)
  );
  CREATE INDEX contacts_by_contact ON contacts (contact, account);
  `,
  // 10: full-text search (search-rules.ts). Each message's words as a tsvector beside it, keyed by
  // seq: the subject weighted A, the body D, so a phrase is sought within one of them as FTS5 does.
  // A side table rather than a column of messages, so the many SELECT * of mail reads do not carry
  // it. Words are runs of [[:alnum:]] in lower case ('simple': no stemming, no stop words), as
  // wire/search.ts and SQLite's unicode61 cut them. Kept in the transaction of every write: a
  // statement trigger indexes what an INSERT added (one INSERT per append batch), the foreign key
  // deletes with the message, so account and room removal and pruning need not know of it.
  `
  CREATE TABLE message_search (
    seq bigint PRIMARY KEY REFERENCES messages (seq) ON DELETE CASCADE,
    doc tsvector NOT NULL
  );
  CREATE INDEX message_search_doc ON message_search USING gin (doc);
  CREATE FUNCTION m4a_search_doc(subject text, body text) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT setweight(to_tsvector('simple', regexp_replace(lower(subject), '[^[:alnum:]]+', ' ', 'g')), 'A')
      || to_tsvector('simple', regexp_replace(lower(body), '[^[:alnum:]]+', ' ', 'g'))
  $fn$;
  CREATE FUNCTION m4a_search_index() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    INSERT INTO message_search (seq, doc) SELECT n.seq, m4a_search_doc(n.subject, n.body) FROM new_rows AS n;
    RETURN NULL;
  END
  $fn$;
  CREATE TRIGGER messages_search_insert AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION m4a_search_index();
  CREATE FUNCTION m4a_search_reindex() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    UPDATE message_search SET doc = m4a_search_doc(NEW.subject, NEW.body) WHERE seq = NEW.seq;
    RETURN NULL;
  END
  $fn$;
  CREATE TRIGGER messages_search_update AFTER UPDATE OF subject, body ON messages
    FOR EACH ROW EXECUTE FUNCTION m4a_search_reindex();
  INSERT INTO message_search (seq, doc) SELECT seq, m4a_search_doc(subject, body) FROM messages;
  `,
  // 11: writers index their own rows (search-docs.ts): cutting text with regexp_replace was most of
  // an insert's cost. A transaction that says so (m4a.search_docs = writer) is skipped by the
  // trigger; any other insert is indexed by it as before.
  `
  CREATE OR REPLACE FUNCTION m4a_search_index() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    IF current_setting('m4a.search_docs', true) = 'writer' THEN
      RETURN NULL;
    END IF;
    INSERT INTO message_search (seq, doc) SELECT n.seq, m4a_search_doc(n.subject, n.body) FROM new_rows AS n;
    RETURN NULL;
  END
  $fn$;
  `,
  // 12: mail from outside (the SMTP door, issue #19) is capped per account; the cap's count reads
  // only such mail, however much other mail the account holds.
  `
  CREATE INDEX messages_external ON messages (to_key, seq) WHERE from_kind = 'external';
  `,
  // 13: a delegate's mail through a relay names the relay and the delegate (SQLite migration 12).
  `
  ALTER TABLE messages ADD COLUMN via text;
  `,
];

/** Brings the schema forward under the advisory lock; returns the versions this call applied. */
export async function migrate(sql: Sql, schema: string | null): Promise<number[]> {
  return sql.begin(async (tx) => {
    // Keyed by the schema, so daemons of different schemas (or test files) never wait on each other.
    const key = schema ?? (await tx<{ s: string }[]>`SELECT current_schema() AS s`)[0]?.s ?? 'public';
    await tx`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int, hashtext(${`migrate:${key}`}))`;
    if (schema !== null) await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
    await tx.unsafe(`CREATE TABLE IF NOT EXISTS m4a_migrations (
      version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const rows = await tx<{ v: number | null }[]>`SELECT max(version) AS v FROM m4a_migrations`;
    const current = rows[0]?.v ?? 0;
    if (current > MIGRATIONS.length) {
      throw new Error(`database schema version ${current} is newer than this build (${MIGRATIONS.length})`);
    }
    const applied: number[] = [];
    for (let v = current; v < MIGRATIONS.length; v++) {
      await tx.unsafe(MIGRATIONS[v] as string);
      await tx`INSERT INTO m4a_migrations (version) VALUES (${v + 1})`;
      applied.push(v + 1);
    }
    return applied;
  });
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
