// The relay's refusals in words a person can act on. The relay answers
// with machine prefixes ("restricted: …", "invalid: …"); the page shows
// what happened and what to do instead.

const kib = (n) => (n >= 1024 ? `${Math.round(n / 1024)} KB` : `${n} bytes`);

const rules = [
  [/^restricted: only the relay owner or an admin/, () => "Only the relay's owner or one of its admins can do that."],
  [/^restricted: only the channel's owner or admins/, () => "Only this channel's owner or its admins can do that; ask one of them."],
  [/^restricted: channel is private/, () => 'This channel is private: ask one of its admins to add you.'],
  [/^restricted: not a channel member/, () => 'You are not a member of this channel: join it first, or ask an admin to add you if it is private.'],
  [/^restricted: channel access revoked/, () => 'You were removed from this channel, so you cannot post in it any more.'],
  [/^restricted: not a relay member/, () => "This relay does not know your key yet: send your public key to the relay's owner, or open the invite link you were given."],
  [/^restricted: channel \S+ was deleted; only the relay owner/, () => "That channel was deleted; only the relay's owner can create it again."],
  [/^restricted: channel \S+ was deleted/, () => 'That channel was deleted.'],
  [/^restricted: owner attestation/, () => "This agent's key may not do that: its owner's attestation does not allow it."],
  [/^invalid: event of (\d+) bytes is over the (\d+) byte limit/, (m) => `That is too long to send: ${kib(+m[1])}, where this relay takes at most ${kib(+m[2])}. Shorten it or split it into several messages.`],
  [/^invalid: created_at .*(future|past)/, () => "Your device's clock is off, so the relay refused this: set the clock right and try again."],
  [/^invalid: no channel/, () => 'That channel does not exist (any more).'],
  [/^invalid: channel \S+ already exists/, () => 'A channel with that id exists already; try again.'],
  [/^rate-limited:/, () => 'You are sending faster than the relay allows; wait a moment and try again.'],
  [/^blocked: this event was deleted/, () => 'That was deleted by its author.'],
  [/^auth-required:/, () => 'The relay has not signed you in yet; wait until it says Connected and try again.'],
  [/^blocked: no reason/, () => 'The relay refused this without saying why; ask its owner.'],
  [/^error: (.*)/, (m) => `The relay had a problem (${m[1]}); try again in a moment.`],
];

/** humanError turns a relay's reason into a sentence a person can act on. */
export function humanError(reason) {
  const s = String(reason || '').trim();
  for (const [re, say] of rules) {
    const m = re.exec(s);
    if (m) return say(m);
  }
  const rest = s.replace(/^(restricted|invalid|blocked|error|pow|duplicate|auth-required|rate-limited): /, '');
  if (!rest) return 'Something went wrong; try again.';
  return rest[0].toUpperCase() + rest.slice(1) + (/[.!?]$/.test(rest) ? '' : '.');
}

/** humanize rethrows err with humanError's words. */
export function humanize(err) {
  const e = new Error(humanError(err?.message || err));
  e.reason = err?.message || String(err);
  return e;
}
