// The repository view: a repository the relay hosts, opened from the
// channel it is shared with (the relay's 30617 names the channel). A modal
// dialog with the branches and tags to switch between, the file tree
// (directories expand, loaded as they open), the file view (monospace,
// line numbers, long lines scroll; binary files and the size cap said in
// words), the README rendered with the client's markdown, the commit log
// with the relay's check of each commit's git-sign-nostr signature, the
// clone command with the git settings the helpers need, and the New pull
// request action (its form is prform.js's). What it shows comes from the
// relay's read-only endpoints (relay/repoview.go), each request NIP-98
// signed; file contents are untrusted text and never reach innerHTML.

import { el } from './util.js';
import { body } from './render.js';
import { tag } from './event.js';
import { npub } from './signer.js';
import { repoFetch } from './repo.js';
import { Tabs } from './tabs.js';
import { commitItem, signerName } from './commits.js';
import { openPRForm } from './prform.js';

export { signatureWords } from './commits.js';

/** repoAnnouncement is the NIP-34 repository announcement kind. */
export const repoAnnouncement = 30617;

/** readmeName matches the file a directory's README is read from. */
const readmeName = /^readme(\.(md|markdown|txt))?$/i;
/** firstRows is how many entries of a directory are in its first frame; rowsPerFrame how many each frame after adds. */
const firstRows = 300, rowsPerFrame = 1000;
/** markdownName matches files rendered as markdown. */
const markdownName = /\.(md|markdown)$/i;

/** RepoIndex keeps the relay's repository announcements by the channel they are shared with. */
export class RepoIndex {
  constructor() { this.by = new Map(); } // d → newest announcement
  /** add takes the relay's 30617 (d = owner/name, buzz-channel); false for anything else. */
  add(ev, relayPubkey) {
    if (ev.kind !== repoAnnouncement || (relayPubkey && ev.pubkey !== relayPubkey)) return false;
    const d = tag(ev, 'd') || '';
    const m = /^([0-9a-f]{64})\/([A-Za-z0-9._-]{1,64})$/.exec(d);
    if (!m || !tag(ev, 'buzz-channel')) return false;
    const old = this.by.get(d);
    if (old && old.created_at >= ev.created_at) return false;
    this.by.set(d, ev);
    return true;
  }
  /** inChannel lists the repositories shared with channel ch: [{owner, name, description, clone, ann}], ann the relay's 30617. */
  inChannel(ch) {
    const out = [];
    for (const [d, ev] of this.by) {
      if (tag(ev, 'buzz-channel') !== ch) continue;
      const [owner, name] = d.split('/');
      const clone = ev.tags.find((t) => t[0] === 'clone');
      out.push({ owner, name, description: tag(ev, 'description') || '', clone: (clone && clone[1]) || `${location.origin}/git/${owner}/${name}.git`, ann: ev });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }
}

/** endpoint is a view endpoint with its query. */
function endpoint(name, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `${name}?${s}` : name;
}

async function getJSON(app, repo, name, params = {}) {
  return JSON.parse(await repoFetch(app, repo, 'GET', endpoint(name, params)));
}

/** bytes says a size in words. */
export function bytes(n) {
  if (n < 1024) return `${n} byte${n === 1 ? '' : 's'}`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(n < 10240 ? 1 : 0)} KiB`;
  return `${(n / (1 << 20)).toFixed(n < 10 << 20 ? 1 : 0)} MiB`;
}

/** codeView shows text with line numbers; long lines scroll. */
export function codeView(text, label) {
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  let nums = '';
  for (let i = 1; i <= lines.length; i++) nums += i + '\n';
  return el('div', { class: 'code-view', role: 'region', 'aria-label': label, tabindex: '0' },
    el('pre', { class: 'code-nums', 'aria-hidden': 'true', text: nums }),
    el('pre', { class: 'code-text', text: lines.join('\n') + '\n' }));
}

/** copyRow is a command with a Copy button. */
function copyRow(label, text, status) {
  const id = 'copy-' + Math.random().toString(36).slice(2, 9);
  const code = el('pre', { class: 'copy-text', id, text });
  const copy = async () => {
    try { await navigator.clipboard.writeText(text); status.textContent = `Copied: ${label}.`; } catch {
      const sel = getSelection();
      sel.selectAllChildren(code);
      status.textContent = 'Copying is not allowed here: the text is selected, press Ctrl+C.';
    }
  };
  return el('div', { class: 'copy-row' }, el('p', { class: 'copy-label', text: label }), code,
    el('button', { type: 'button', text: 'Copy', 'aria-label': 'Copy ' + label, 'aria-describedby': id, onclick: copy }));
}

/** openRepo shows repository repo ({owner, name, description, clone}) of the channel, as a modal dialog. */
export function openRepo(repo, app, others = []) {
  const titleID = 'repo-title';
  document.getElementById('repo-page')?.remove();
  const dlg = el('dialog', { class: 'pr-page repo-page', id: 'repo-page', 'aria-labelledby': titleID });
  const status = el('p', { class: 'repo-status', role: 'status' });
  const refSel = el('select', { id: 'repo-ref', 'aria-label': 'Branch or tag' });
  const tree = el('ul', { class: 'repo-tree', 'aria-label': 'Files' }, el('li', { class: 'hint', text: 'Loading the files…' }));
  const file = el('section', { class: 'repo-file', 'aria-label': 'File' });
  const readme = el('section', { class: 'repo-readme', 'aria-label': 'README' });
  const log = el('ol', { class: 'repo-log', 'aria-label': 'Commits' });
  const more = el('button', { type: 'button', class: 'link', text: 'Older commits', hidden: true });
  const state = { ref: '', logSkip: 0, logFor: '', opened: '', refs: null };
  // A new pull request: head and base among the branches the refs named.
  const newPR = el('button', { type: 'button', class: 'primary', text: 'New pull request', hidden: true, onclick: () => {
    const refs = state.refs;
    const names = refs.branches.map((b) => b.name);
    const base = names.includes(refs.head) ? refs.head : names.includes('main') ? 'main' : names[0];
    const head = names.includes(state.ref) && state.ref !== base ? state.ref : names.find((n) => n !== base) || base;
    openPRForm(repo, app, { branches: refs.branches, head, base, done: () => dlg.close() });
  } });
  const fail = (where) => (e) => { status.textContent = `${where}: ${e.message || e}`; };
  const tabs = el('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Repository' },
    el('button', { type: 'button', role: 'tab', id: 'repo-tab-code', 'aria-controls': 'repo-panel-code', 'aria-selected': 'true', text: 'Code' }),
    el('button', { type: 'button', role: 'tab', id: 'repo-tab-log', 'aria-controls': 'repo-panel-log', 'aria-selected': 'false', tabindex: '-1', text: 'Commits' }),
    el('button', { type: 'button', role: 'tab', id: 'repo-tab-clone', 'aria-controls': 'repo-panel-clone', 'aria-selected': 'false', tabindex: '-1', text: 'Clone' }));
  const me = app.me || '';
  const settings = `git config --global credential.helper nostr\ngit config --global credential.useHttpPath true`;
  const signing = `git config gpg.format x509\ngit config gpg.x509.program git-sign-nostr\ngit config user.signingkey ${me ? npub(me) : '<your npub>'}\ngit config commit.gpgSign true`;
  const clonePanel = el('div', { id: 'repo-panel-clone', class: 'tab-panel', role: 'tabpanel', 'aria-labelledby': 'repo-tab-clone', tabindex: '0', hidden: true },
    copyRow('Clone command', `git clone ${repo.clone}`, status),
    copyRow('Let git sign in to the relay with your Nostr key (git-credential-nostr), once', settings, status),
    copyRow('Sign your commits with your Nostr key (git-sign-nostr), in the clone', signing, status),
    el('p', { class: 'hint', text: 'Both helpers are this relay\'s buzzbox executable (buzzbox install DIR puts them on PATH) and read your key from NOSTR_PRIVATE_KEY, or the 0600 file git config nostr.keyfile names.' }));
  const codePanel = el('div', { id: 'repo-panel-code', class: 'tab-panel repo-code', role: 'tabpanel', 'aria-labelledby': 'repo-tab-code' },
    el('nav', { class: 'repo-side', 'aria-label': 'File tree' }, tree), el('div', { class: 'repo-main' }, file, readme));
  const logPanel = el('div', { id: 'repo-panel-log', class: 'tab-panel', role: 'tabpanel', 'aria-labelledby': 'repo-tab-log', tabindex: '0', hidden: true }, log, more);
  const pick = others.length > 1 ? el('select', { 'aria-label': 'Repository of this channel', onchange: (e) => openRepo(others[Number(e.target.value)], app, others) },
    others.map((r, i) => el('option', { value: String(i), selected: r.owner === repo.owner && r.name === repo.name, text: r.name }))) : null;
  dlg.append(
    el('header', { class: 'pr-header' },
      el('h2', { id: titleID }, el('span', { class: 'badge', text: 'repository' }), ' ', repo.name),
      el('button', { type: 'button', class: 'icon', 'aria-label': 'Close repository', text: '✕', onclick: () => dlg.close() })),
    el('p', { class: 'pr-meta', text: (repo.description ? repo.description + ' · ' : '') + 'owned by ' + signerName(app, repo.owner) }),
    el('div', { class: 'repo-bar' }, pick, refSel, newPR), tabs, codePanel, logPanel, clonePanel, status);
  const tabCtl = new Tabs(tabs);
  tabs.addEventListener('click', () => { if (tabCtl.selected() === 'repo-tab-log') loadLog(false); });
  tabs.addEventListener('keyup', () => { if (tabCtl.selected() === 'repo-tab-log') loadLog(false); });

  /** listDir fills ul with the directory at path: the first rows at once, the rest in the frames after, so a directory of thousands paints at once. */
  const listDir = async (ul, path) => {
    const ans = await getJSON(app, repo, 'buzz-tree', { ref: state.ref, path });
    const rows = ans.entries;
    for (const e of rows) e.path = path ? path + '/' + e.name : e.name;
    const fill = (from, to) => {
      const frag = document.createDocumentFragment();
      for (let i = from; i < to; i++) frag.append(entryItem(rows[i]));
      return frag;
    };
    const first = Math.min(rows.length, firstRows);
    ul.replaceChildren(fill(0, first));
    const tail = () => {
      if (ans.truncated) ul.append(el('li', { class: 'hint', text: `Only the first ${rows.length} entries are shown (the view lists at most ${ans.limit} a directory).` }));
      if (!rows.length) ul.append(el('li', { class: 'hint', text: 'Empty.' }));
    };
    if (first === rows.length) { tail(); return ans; }
    let at = first;
    // Each further batch comes after the frame before it was painted.
    const next = () => requestAnimationFrame(() => setTimeout(more, 0));
    const more = () => {
      if (!ul.isConnected) return;
      const to = Math.min(rows.length, at + rowsPerFrame);
      ul.append(fill(at, to));
      at = to;
      if (at < rows.length) next(); else tail();
    };
    next();
    return ans;
  };
  // One listener for the whole tree: a directory expands, a file opens.
  tree.addEventListener('click', (ev) => {
    const btn = ev.target.closest('button.repo-entry');
    if (!btn) return;
    if (!btn.classList.contains('dir')) { openFile(btn.dataset.path); return; }
    const sub = btn.nextElementSibling;
    const open = btn.getAttribute('aria-expanded') !== 'true';
    btn.setAttribute('aria-expanded', String(open));
    sub.hidden = !open;
    if (open && !sub.childElementCount) {
      sub.append(el('li', { class: 'hint', text: 'Loading…' }));
      listDir(sub, btn.dataset.path).catch((x) => { sub.replaceChildren(el('li', { class: 'hint', text: String(x.message || x) })); });
    }
  });
  const entryItem = (e) => {
    const li = document.createElement('li');
    if (e.type === 'submodule') { li.append(el('span', { class: 'repo-entry', text: e.name + ' (submodule)' })); return li; }
    const btn = document.createElement('button');
    btn.type = 'button';
    btn.dataset.path = e.path;
    if (e.type === 'dir') {
      btn.className = 'repo-entry dir';
      btn.setAttribute('aria-expanded', 'false');
      btn.textContent = e.name + '/';
      const sub = document.createElement('ul');
      sub.hidden = true;
      li.append(btn, sub);
      return li;
    }
    btn.className = 'repo-entry';
    btn.textContent = e.name + (e.type === 'link' ? ' →' : '');
    li.append(btn);
    return li;
  };
  const openFile = async (path) => {
    state.opened = path;
    file.replaceChildren(el('p', { class: 'hint', text: 'Loading ' + path + '…' }));
    try {
      const f = await getJSON(app, repo, 'buzz-blob', { ref: state.ref, path });
      if (state.opened !== path) return;
      const head = el('header', { class: 'repo-file-head' }, el('h3', { text: path }), el('span', { class: 'hint', text: bytes(f.size) }),
        el('button', { type: 'button', class: 'link', text: 'Close file', onclick: () => { state.opened = ''; file.replaceChildren(); } }));
      if (f.binary) {
        file.replaceChildren(head, el('p', { class: 'repo-binary', text: `Binary file (${bytes(f.size)}): not shown.` }));
        return;
      }
      const cut = f.truncated ? el('p', { class: 'repo-cut', text: `Showing the first ${bytes(f.limit)} of ${bytes(f.size)}: the view shows at most ${bytes(f.limit)} of a file. Clone the repository for the rest.` }) : null;
      file.replaceChildren(...[head, cut, codeView(f.text, 'Contents of ' + path)].filter(Boolean));
    } catch (e) { file.replaceChildren(el('p', { class: 'hint', text: String(e.message || e) })); }
  };
  const showReadme = async (entries) => {
    const r = entries.find((e) => e.type === 'file' && readmeName.test(e.name));
    if (!r) { readme.replaceChildren(); return; }
    const f = await getJSON(app, repo, 'buzz-blob', { ref: state.ref, path: r.path });
    if (f.binary) { readme.replaceChildren(); return; }
    const content = markdownName.test(r.name) ? el('div', { class: 'repo-markdown msg-body' }, body(f.text, { name: (pk) => app.store.name(pk), mentioned: [] })) : codeView(f.text, 'Contents of ' + r.path);
    readme.replaceChildren(el('h3', { text: r.name }), content);
  };
  const loadRef = async () => {
    state.logSkip = 0;
    state.logFor = '';
    file.replaceChildren();
    tree.replaceChildren(el('li', { class: 'hint', text: 'Loading the files…' }));
    try {
      const ans = await listDir(tree, '');
      showReadme(ans.entries).catch(fail('README'));
    } catch (e) { tree.replaceChildren(el('li', { class: 'hint', text: String(e.message || e) })); }
    if (tabCtl.selected() === 'repo-tab-log') loadLog(false);
  };
  const loadLog = async (older) => {
    if (!older && state.logFor === state.ref) return;
    if (!older) { state.logFor = state.ref; state.logSkip = 0; log.replaceChildren(el('li', { class: 'hint', text: 'Loading the commits…' })); }
    try {
      const ans = await getJSON(app, repo, 'buzz-log', { ref: state.ref, skip: state.logSkip || '' });
      if (!older) log.replaceChildren();
      for (const c of ans.commits) log.append(commitItem(c, app));
      if (!ans.commits.length && !older) log.append(el('li', { class: 'hint', text: 'No commits.' }));
      state.logSkip += ans.commits.length;
      more.hidden = !ans.more;
    } catch (e) { log.replaceChildren(el('li', { class: 'hint', text: String(e.message || e) })); }
  };
  more.addEventListener('click', () => loadLog(true));
  refSel.addEventListener('change', () => { state.ref = refSel.value; loadRef(); });

  dlg.addEventListener('close', () => dlg.remove());
  document.body.append(dlg);
  dlg.showModal();
  // HEAD's tree is asked for with the refs, not after them.
  const headTree = listDir(tree, '');
  headTree.catch(() => {}); // answered below, once the refs say what to show
  getJSON(app, repo, 'buzz-refs').then((refs) => {
    state.refs = refs;
    newPR.hidden = !refs.branches.length || !repo.ann;
    const opt = (name, kind) => el('option', { value: name, text: kind === 'tag' ? 'tag ' + name : name });
    refSel.replaceChildren(
      el('optgroup', { label: 'Branches' }, refs.branches.map((b) => opt(b.name, 'branch'))),
      refs.tags.length ? el('optgroup', { label: 'Tags' }, refs.tags.map((t) => opt(t.name, 'tag'))) : null);
    const head = refs.head && refs.branches.some((b) => b.name === refs.head) ? refs.head : '';
    refSel.value = state.ref = head || (refs.branches[0] || refs.tags[0] || { name: '' }).name;
    if (!state.ref) { tree.replaceChildren(el('li', { class: 'hint', text: 'Nothing pushed yet. Clone it (the Clone tab) and push a branch.' })); return; }
    if (!head) { loadRef(); return; } // HEAD names no branch: show the one picked
    headTree.then((ans) => showReadme(ans.entries)).catch((e) => { tree.replaceChildren(el('li', { class: 'hint', text: String(e.message || e) })); });
  }).catch((e) => { tree.replaceChildren(el('li', { class: 'hint', text: String(e.message || e) })); });
  return dlg;
}
