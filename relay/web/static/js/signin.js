// Sign-in: a NIP-07 extension when the browser has one, else a key made
// here (shown once as an nsec to save) or an imported nsec. Resolves with
// a signer and, for a new key, the name the person gave; the dialog stays
// up until the caller closes it (closeSignIn), once what comes next is
// ready to be used.

import { localSigner, extensionSigner, parseSecret, saveKey, useExtension, randomSecret } from './signer.js';

const $ = (id) => document.getElementById(id);

/** closeSignIn closes the sign-in dialog. */
export function closeSignIn() { $('signin').close(); }

/** signIn shows the dialog until the person has a signer. */
export function signIn() {
  const dlg = $('signin');
  const err = $('signin-error');
  return new Promise((resolve) => {
    const fail = (e) => { err.textContent = String(e.message || e); };
    if (window.nostr) {
      $('use-extension').hidden = false;
      $('use-extension').onclick = async () => {
        try {
          const s = await extensionSigner();
          useExtension();
          resolve({ signer: s, name: '' });
        } catch (e) { fail(e); }
      };
    }
    $('create-form').onsubmit = (e) => {
      e.preventDefault();
      const sk = randomSecret();
      const s = localSigner(sk);
      saveKey(sk);
      $('signin-choose').hidden = true;
      $('signin-save').hidden = false;
      $('new-nsec').value = s.nsec();
      $('new-nsec').focus();
      $('new-nsec').select();
      $('saved-key').onclick = () => {
        $('new-nsec').value = '';
        resolve({ signer: s, name: $('create-name').value.trim() });
      };
    };
    $('import-form').onsubmit = (e) => {
      e.preventDefault();
      try {
        const sk = parseSecret($('import-nsec').value);
        $('import-nsec').value = '';
        saveKey(sk);
        resolve({ signer: localSigner(sk), name: '' });
      } catch (x) { fail(x); }
    };
    dlg.addEventListener('cancel', (e) => e.preventDefault());
    dlg.showModal();
    $('create-name').focus();
  });
}
