// One-time codes and links of verification mail (engine/mail-extract.ts): real-looking mails of
// the common senders, the false positives a naive digit match would give, and adversarial 64 KiB
// bodies whose answers show the scan finished and stayed right (no timed assertion).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EXTRACT_LIMITS, extractCodesAndLinks as extract } from '../src/engine/mail-extract.js';

const codes = (subject: string, body: string): string[] => extract(subject, body).codes;

describe('codes in verification mail', () => {
  it('GitHub device verification', () => {
    const body = [
      'Hey octocat!',
      '',
      'A sign in attempt requires further verification because we did not recognize your device.',
      'To complete the sign in, enter the verification code on the unrecognized device.',
      '',
      'Device: Chrome on Linux',
      'Verification code: 482913',
      '',
      'If you did not attempt to sign in, change your password at https://github.com/settings/admin.',
      'Thanks, The GitHub Team — 88 Colin P Kelly Jr Street, San Francisco, CA 94107',
    ].join('\n');
    assert.deepEqual(extract('[GitHub] Please verify your device', body), { codes: ['482913'], links: ['https://github.com/settings/admin'] });
  });

  it('Slack: a dashed code alone on its line, the subject naming it', () => {
    const body = 'Confirm your email address\nYour confirmation code is below — enter it in your open browser window.\n\n  123-456\n\nQuestions? https://slack.com/help/contact.';
    assert.deepEqual(codes('Slack confirmation code: 123-456', body), ['123456']);
    assert.deepEqual(codes('Confirm your email address', body), ['123456']);
  });

  it('Google: G-123456 in the subject gives the digits', () => {
    assert.deepEqual(codes('G-839201 is your Google verification code', 'Use this code to finish: 839201\nIt expires in 24 hours.'), ['839201']);
  });

  it('alphanumeric codes, one case and a digit; mixed case and letters only are words', () => {
    assert.deepEqual(codes('Sign in', 'Your login code is A7K9Q2.'), ['A7K9Q2']);
    assert.deepEqual(codes('Sign in', 'Your one-time passcode: x7k9q2'), ['x7k9q2']);
    assert.deepEqual(codes('Sign in', 'Your security code: ABCD-1234'), ['ABCD1234']);
    assert.deepEqual(codes('Verify', 'We support OAuth2 and a verification link below; no code needed. Thanks'), []);
    assert.deepEqual(codes('Verify', 'Your verification code is HELLO'), []);
  });

  it('PIN, OTP and words of other languages', () => {
    assert.deepEqual(codes('Card', 'Your new PIN is 4821'), ['4821']);
    assert.deepEqual(codes('OTP', 'Use 55120934 to log in'), ['55120934']);
    assert.deepEqual(codes('', 'Tu código de verificación es 771204'), ['771204']);
    assert.deepEqual(codes('', 'Ihr Bestätigungscode lautet 604118.'), ['604118']);
    assert.deepEqual(codes('', '您的验证码：358201，5分钟内有效。'), ['358201']);
    assert.deepEqual(codes('', '認証コード: 902117'), ['902117']);
  });

  it('a code far from the key words is not one; the subject counts anywhere', () => {
    const far = 'Order number 88887777 was placed.\n' + 'lorem ipsum '.repeat(30) + '\nYour login code is 314159.';
    assert.deepEqual(codes('Welcome', far), ['314159']);
    assert.deepEqual(codes('Your code 271828 inside', 'no words here'), ['271828']);
    assert.deepEqual(codes('Weekly digest', 'Shipment 55512345 arrives soon.\n\n123456\n'), []);
  });

  it('at most five, deduplicated, subject first', () => {
    const body = 'code 111111 code 222222 code 333333 code 444444 code 555555 code 666666 code 111111';
    assert.deepEqual(codes('Your code is 999999', body), ['999999', '111111', '222222', '333333', '444444']);
    assert.equal(codes('', body).length, EXTRACT_LIMITS.codes);
  });
});

describe('false positives refused', () => {
  const near = (s: string): string[] => codes('Your verification code', s);
  it('years, dates and times', () => {
    assert.deepEqual(near('Copyright 2026. Sent 2026-12-02 at 12:30, 02/12/2026, 02.12.2026, 20261202, 1230 UTC, 10 pm.'), []);
  });
  it('prices', () => {
    assert.deepEqual(near('Total $1234, €5678, 4321 USD, EUR 8765, price 1499, 25%.'), []);
  });
  it('phone numbers, ZIP codes, order and reference numbers', () => {
    assert.deepEqual(near('Call +1 (555) 123-4567 or 555 123 4567 or 555.123.4567.'), []);
    assert.deepEqual(codes('Welcome', 'Enter your ZIP code 94107 for delivery; postal code 10115; promo code SAVE2026.'), []);
    assert.deepEqual(near('Order #55512345, order 44441111, invoice no. 20251234, ref 778899, ticket 123456.'), []);
  });
  it('hex colours, numbers in URLs and e-mail addresses', () => {
    assert.deepEqual(near('color: #a1b2c3; see https://example.com/track/987654?id=123456 or www.example.com/654321 or mail u123456@example.com'), []);
  });
  it('a real code among them is still found', () => {
    assert.deepEqual(near('Order #55512345 on 2026-12-02 at 12:30 for $1234.\nYour code: 735102\nCall 555 123 4567.'), ['735102']);
  });
});

describe('links', () => {
  it('verification links first, then the rest in order; punctuation stripped; deduplicated', () => {
    const body = [
      'Read our blog (https://example.com/blog).',
      'Confirm: https://example.com/account/confirm?token=abc123&amp;u=7.',
      'Or https://example.com/blog again, and https://example.com/help!',
      'Magic link: <https://app.example.com/auth/magic/xyz>',
      'Unsubscribe: https://example.com/unsubscribe?token=zzz',
      'Markdown [reset](https://example.com/password/reset?t=1), wiki https://en.wikipedia.org/wiki/Foo_(bar).',
      'ftp://example.com/file is not a link here.',
    ].join('\n');
    assert.deepEqual(extract('Hi', body).links, [
      'https://example.com/account/confirm?token=abc123&u=7',
      'https://app.example.com/auth/magic/xyz',
      'https://example.com/password/reset?t=1',
      'https://example.com/blog',
      'https://example.com/help',
      'https://example.com/unsubscribe?token=zzz',
      'https://en.wikipedia.org/wiki/Foo_(bar)',
    ]);
  });

  it('at most 20; a link over 2,048 characters is dropped, not cut', () => {
    const many = Array.from({ length: 30 }, (_, i) => `https://e.com/p/${i}`).join(' ');
    const out = extract('', many).links;
    assert.equal(out.length, EXTRACT_LIMITS.links);
    assert.equal(out[0], 'https://e.com/p/0');
    const long = `https://e.com/${'a'.repeat(2100)}`;
    assert.deepEqual(extract('', `${long} https://e.com/verify?x=1`).links, ['https://e.com/verify?x=1']);
    const edge = `https://e.com/${'b'.repeat(2048 - 'https://e.com/'.length)}`;
    assert.deepEqual(extract('', `${edge}.`).links, [edge]);
  });
});

describe('bounded work on 64 KiB adversarial bodies', () => {
  const K64 = 64 * 1024;
  it('long runs of digits, letters, URL characters and addresses finish with the right answer', () => {
    assert.deepEqual(extract('code', '1'.repeat(K64)), { codes: [], links: [] });
    assert.deepEqual(extract('code', 'a1'.repeat(K64 / 2)), { codes: [], links: [] });
    assert.deepEqual(extract('', `https://${'a'.repeat(K64)}`), { codes: [], links: [] });
    assert.deepEqual(extract('', 'a@'.repeat(K64 / 2)), { codes: [], links: [] });
    assert.deepEqual(extract('', `https://a.com/${'('.repeat(K64 / 2)}${')'.repeat(K64 / 2)}`).links, []);
    assert.deepEqual(extract('', '-'.repeat(K64) + ' code 246810'), { codes: ['246810'], links: [] });
  });
  it('many key words, candidates and links', () => {
    const r = extract('', 'code 1234 '.repeat(K64 / 10));
    assert.deepEqual(r.codes, ['1234']);
    const l = extract('', 'http://a.co/v?token=1 '.repeat(K64 / 22));
    assert.deepEqual(l.links, ['http://a.co/v?token=1']);
    const distinct = extract('', Array.from({ length: 3000 }, (_, i) => `https://e.com/${i}`).join(' '));
    assert.equal(distinct.links.length, EXTRACT_LIMITS.links);
    assert.deepEqual(extract('', 'verification '.repeat(K64 / 13) + '123').codes, []);
  });
});
