// A commit as the repository view and the pull request page list it:
// subject, short id, author, time and the relay's check of its
// git-sign-nostr signature in words (relay/repoview.go's buzz-log
// answers). Commit messages are untrusted text and never reach innerHTML.

import { el, relTime, fullTime } from './util.js';
import { npub } from './signer.js';

/** signerName shows a key as its profile name, else its npub cut short. */
export function signerName(app, pk) {
  const named = app.store.profiles.get(pk);
  if (named && (named.display_name || named.name)) return named.display_name || named.name;
  const n = npub(pk);
  return n.slice(0, 12) + '…' + n.slice(-6);
}

/** signatureWords says what the relay found of a commit's signature: [class, text, detail]. */
export function signatureWords(sig, nameOf) {
  switch (sig && sig.status) {
    case 'signed': {
      let text = 'signed by ' + nameOf(sig.signer);
      if (sig.owner) text += ' for ' + nameOf(sig.owner);
      const detail = sig.oa_status === 'expired' ? 'its owner attestation had expired' : sig.oa_status === 'invalid_signature' ? 'its owner attestation does not verify' : '';
      return ['signed', text, detail];
    }
    case 'invalid': return ['invalid', 'invalid signature', sig.reason || ''];
    case 'unknown': return ['unknown', 'signed, not checked', sig.reason || ''];
    default: return ['unsigned', 'unsigned', ''];
  }
}

/** commitItem is one commit of a buzz-log answer as a list item. */
export function commitItem(c, app) {
  const [cls, text, detail] = signatureWords(c.signature, (pk) => signerName(app, pk));
  const when = c.committer.time || c.author.time;
  return el('li', { class: 'repo-commit', 'data-id': c.id, 'data-signature': cls },
    el('p', { class: 'repo-commit-subject', text: c.subject || '(no message)' }),
    el('p', { class: 'repo-commit-meta' }, el('code', { text: c.id.slice(0, 7) }), ' ', c.author.name || '?', ' · ',
      el('time', { title: fullTime(when), text: relTime(when) }), ' · ',
      el('span', { class: 'sig ' + cls, text }), detail ? el('span', { class: 'hint', text: ' (' + detail + ')' }) : null));
}
