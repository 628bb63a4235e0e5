// The account menu's key actions for a key kept in this browser: back it
// up (the nsec, after a confirm) and sign in on another device (a
// one-time link, like the one `buzzbox up` prints, minted by POST
// /login/new under a NIP-98 token of this same key: the key travels in
// the request body, never in a URL, and the link carries only the token).

import { authorization } from './nip98.js';

const $ = (id) => document.getElementById(id);

/** wireAccount connects the profile dialog's key buttons for signer. */
export function wireAccount(signer) {
  const local = signer.kind === 'key';
  $('key-actions').hidden = !local;
  $('backup-out').hidden = true;
  $('device-out').hidden = true;
  if (!local) return;
  $('backup-key').onclick = () => {
    if (!window.confirm('Show your secret key? Anyone who sees it can read and write as you: keep it in a password manager.')) return;
    $('backup-nsec').value = signer.nsec();
    $('backup-out').hidden = false;
    $('backup-nsec').focus();
    $('backup-nsec').select();
  };
  $('device-link').onclick = async () => {
    $('profile-error').textContent = '';
    $('device-out').hidden = true;
    try {
      const body = JSON.stringify({ nsec: signer.nsec() });
      const url = location.origin + '/login/new';
      const res = await fetch('/login/new', {
        method: 'POST', body, credentials: 'omit', cache: 'no-store',
        headers: { 'Content-Type': 'application/json', Authorization: await authorization(signer, url, 'POST', body) },
      });
      let data = {};
      try { data = await res.json(); } catch { data = {}; }
      if (!res.ok || typeof data.token !== 'string') throw new Error(typeof data.error === 'string' ? data.error : `the relay answered ${res.status}`);
      const minutes = Math.round((data.expires_in || 600) / 60);
      $('device-link-out').value = `${location.origin}/#login=${data.token}`;
      $('device-note').textContent = `Open this link on your other device within ${minutes} minutes; it works once. Do not post it where others can read it: it signs in as you.`;
      $('device-out').hidden = false;
      $('device-link-out').focus();
      $('device-link-out').select();
    } catch (e) {
      $('profile-error').textContent = 'No link: ' + (e.message || e);
    }
  };
}
