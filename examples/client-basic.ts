// Examples for docs/client.md. They are type-checked with the project (npm run typecheck), so they
// stay true to the client's API.
import { MailClient, MailError, detailText } from '../src/client/index.js';

export async function sendAndWait(url: string, mySecret: string): Promise<void> {
  const mail = new MailClient({ url, token: mySecret });
  try {
    // Who am I? My address is where others can answer me.
    const me = await mail.whoami();
    console.log(`I am ${me.address}`);

    // Send to an account, a session (codex/s-… or codex/reviewer) or a room (#reviewers).
    const sent = await mail.send({ to: 'codex', subject: 'review please', body: 'The diff is on branch fix-42', idempotency_key: 'review-fix-42' });
    console.log(`sent ${sent.message_id} in thread ${sent.thread_id}`);

    // Wait up to 30 s for the answer; the page is empty when the wait expires.
    let cursor: string | undefined;
    for (;;) {
      const page = await mail.inbox({ wait_secs: 30, ...(cursor ? { after: cursor } : {}) });
      cursor = page.next_cursor ?? cursor;
      const reply = page.messages.find((m) => m.thread_id === sent.thread_id);
      if (reply) {
        console.log(`${reply.from}: ${reply.body ?? ''}`);
        await mail.ack(reply.message_id);
        break;
      }
    }
  } catch (err) {
    // Refusals come back as MailError with the daemon's code and inputs.
    if (err instanceof MailError && err.code === 'unknown_participant') console.error(`no such account: ${detailText(err.details.participant)}`);
    else throw err;
  } finally {
    mail.close();
  }
}
