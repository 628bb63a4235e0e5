// The page's entry: who the person is (a sign-in link, the key this
// browser keeps, or the sign-in dialog), then the workspace (workspace.js).
// A person not yet signed in sees the dialog as soon as the few modules
// signing in needs have run; the workspace's modules load while they read
// it. A person already signed in loads both at once.

import { restore, kept } from './signer.js';
import { signIn, closeSignIn } from './signin.js';
import { takeLink, redeemInvite, redeemLogin } from './invite.js';

const $ = (id) => document.getElementById(id);

// Performance marks: the person can first act (the sign-in dialog is up,
// or the workspace is drawn); the workspace's modules have all run.
const firstScreenMark = 'buzz:first-screen';
const workspaceMark = 'buzz:workspace-loaded';

function firstScreen() {
  if (performance.getEntriesByName(firstScreenMark).length === 0) performance.mark(firstScreenMark);
}

/** loadWorkspace imports workspace.js (and every module it imports), marking when it has. */
function loadWorkspace() {
  return import('./workspace.js').then((m) => { performance.mark(workspaceMark); return m; });
}

async function main() {
  const link = takeLink();
  let workspace = link?.kind === 'login' || kept() ? loadWorkspace() : null;
  let signer = null;
  let notice = '';
  if (link?.kind === 'login') {
    try { signer = await redeemLogin(link.token); notice = 'Signed in with the link from buzzbox up.'; } catch (e) { $('signin-error').textContent = e.message; }
  }
  if (!signer) signer = await restore().catch(() => null);
  let name = '';
  if (!signer) {
    if (link?.kind === 'invite') $('signin-title').textContent = 'You are invited: make a key or sign in to join';
    const chosen = signIn(); // the dialog is up once this returns
    firstScreen();
    workspace ??= loadWorkspace();
    ({ signer, name } = await chosen);
  }
  workspace ??= loadWorkspace();
  let joined = [];
  if (link?.kind === 'invite') {
    try {
      joined = (await redeemInvite(signer, link.token)).channels;
      notice = `Invite accepted: you are a member${joined.length ? ` of ${joined.length} channel${joined.length === 1 ? '' : 's'}` : ''}.`;
    } catch (e) { notice = e.message; }
  }
  const { openWorkspace } = await workspace;
  // The sign-in dialog closes once the workspace can take a click.
  await openWorkspace(signer, { joined, notice, name, wired: () => { if ($('signin').open) closeSignIn(); } });
  firstScreen();
}

main().catch((e) => { $('status').textContent = 'Failed to start: ' + (e.message || e); });
