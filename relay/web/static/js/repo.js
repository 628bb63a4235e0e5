// Pull requests of repositories the relay hosts (NIP-34): the card a pull
// request (kind 1618) shows as in its repository's channel, and the pull
// request page, a dialog with the description, its commits (those of its
// tip its base lacks, each with the relay's check of its signature), the
// files changed as a unified diff with per-file collapse (large diffs
// start collapsed and render a file when it is opened), the comments and reviews (NIP-22 kind
// 1111 with buzz-review; comments on lines and their threads are
// prlines.js's), and the actions: comment, approve, request changes,
// merge (the relay's git merges; the page then signs the merged status
// 1631) and close. The relay decides who may merge; its refusal is
// shown as it says it. Event content is untrusted and never reaches
// innerHTML.

import { el, relTime } from './util.js';
import { body, diffBlock } from './render.js';
import { tag, tags } from './event.js';
import { authorization } from './nip98.js';
import { fileLines, lineThreads, refreshThreads } from './prlines.js';
import { commitItem } from './commits.js';

/** prK are the NIP-34 and NIP-22 kinds of the build loop. */
export const prK = { pr: 1618, update: 1619, open: 1630, merged: 1631, closed: 1632, draft: 1633, comment: 1111 };
/** prKinds are what the page subscribes to for pull requests. */
export const prKinds = [prK.pr, prK.update, prK.open, prK.merged, prK.closed, prK.draft, prK.comment];

// largeDiffLines is the size past which a diff opens with every file
// collapsed, each rendered only when opened, so a 5 000-line diff paints
// at once.
const largeDiffLines = 1500;
// maxDiffChars bounds the diff text the page renders.
const maxDiffChars = 8 << 20;

const statusNames = { [prK.open]: 'open', [prK.merged]: 'merged', [prK.closed]: 'closed', [prK.draft]: 'draft' };

/** PRIndex keeps, per pull request id, its updates, statuses and comments. */
export class PRIndex {
  constructor() { this.by = new Map(); this.seen = new Set(); }
  entry(id) {
    if (!this.by.has(id)) this.by.set(id, { updates: [], statuses: [], comments: [] });
    return this.by.get(id);
  }
  /** add files ev under the pull request it names; false when it names none. */
  add(ev) {
    if (this.seen.has(ev.id)) return false;
    this.seen.add(ev.id);
    if (ev.kind === prK.update || ev.kind === prK.comment) {
      const id = tag(ev, 'E');
      if (!id) return false;
      const e = this.entry(id);
      (ev.kind === prK.update ? e.updates : e.comments).push(ev);
      return true;
    }
    if (statusNames[ev.kind]) {
      const id = tag(ev, 'e');
      if (!id) return false;
      this.entry(id).statuses.push(ev);
      return true;
    }
    return false;
  }
  /** state is the pull request's newest status name and tip. */
  state(pr) {
    const e = this.by.get(pr.id) || { updates: [], statuses: [], comments: [] };
    const newest = (list) => list.reduce((a, b) => (!a || b.created_at >= a.created_at ? b : a), null);
    const s = newest(e.statuses), u = newest(e.updates);
    return { status: s ? statusNames[s.kind] : 'open', tip: (u && tag(u, 'c')) || tag(pr, 'c') || '', comments: [...e.comments].sort((a, b) => a.created_at - b.created_at) };
  }
}

/** repoOf reads the repository a pull request names: {owner, name}, or null. */
export function repoOf(pr) {
  const m = /^30617:[0-9a-f]{64}:([0-9a-f]{64})\/([A-Za-z0-9._-]{1,64})$/.exec(tag(pr, 'a') || '');
  return m ? { owner: m[1], name: m[2] } : null;
}

function describe(pr) {
  return { subject: tag(pr, 'subject') || '(no title)', head: tag(pr, 'branch-name') || '?', base: tag(pr, 'buzz-base') || 'main' };
}

/** prCard is the pull request's card among its channel's messages. */
export function prCard(pr, app) {
  const { subject, head, base } = describe(pr);
  const st = app.prs.state(pr);
  return el('div', { class: 'pr-card', role: 'group', 'aria-label': 'Pull request ' + subject, 'data-status': st.status },
    el('p', { class: 'pr-title' }, el('span', { class: 'badge', text: 'pull request' }), ' ', el('strong', { text: subject }), ' ',
      el('span', { class: 'pr-status ' + st.status, text: st.status })),
    el('p', { class: 'pr-meta', text: `${head} → ${base}` + (st.tip ? ` · ${st.tip.slice(0, 7)}` : '') + ` · ${st.comments.length} comment${st.comments.length === 1 ? '' : 's'}` }),
    el('button', { type: 'button', class: 'link', text: 'View pull request', onclick: () => openPR(pr, app) }));
}

/** parseDiff splits a unified diff into files: [{path, text, adds, dels, lines}]. */
export function parseDiff(text) {
  const files = [];
  let cur = null;
  for (const line of text.split('\n')) {
    if (line.startsWith('diff --git ')) {
      const m = / b\/(.*)$/.exec(line);
      cur = { path: m ? m[1] : line.slice(11), lines: [line], adds: 0, dels: 0 };
      files.push(cur);
      continue;
    }
    if (!cur) continue;
    cur.lines.push(line);
    if (line.startsWith('+') && !line.startsWith('+++')) cur.adds++;
    else if (line.startsWith('-') && !line.startsWith('---')) cur.dels++;
  }
  return files.map((f) => ({ path: f.path, adds: f.adds, dels: f.dels, lines: f.lines.length, text: f.lines.join('\n') }));
}

/**
 * diffView renders files, each a <details> that collapses; large diffs
 * start collapsed and render lazily. With lines (a function of a file's
 * path and text giving its rendered lines) the files' lines are that
 * function's: the pull request page's, which take comments.
 */
export function diffView(files, lines = (path, text) => diffBlock(text)) {
  const total = files.reduce((n, f) => n + f.lines, 0);
  const large = total > largeDiffLines;
  const box = el('div', { class: 'pr-files', 'data-large': String(large) },
    el('p', { class: 'hint', text: `${files.length} file${files.length === 1 ? '' : 's'} changed` + (large ? ` · ${total} lines: open a file to see it` : '') }));
  for (const f of files) {
    const d = el('details', { class: 'pr-file', 'data-path': f.path },
      el('summary', {}, el('span', { class: 'pr-path', text: f.path }), ' ', el('span', { class: 'pr-adds', text: '+' + f.adds }), ' ', el('span', { class: 'pr-dels', text: '−' + f.dels })));
    const fill = () => { if (d.childElementCount === 1) d.append(lines(f.path, f.text)); };
    if (!large) { d.open = true; fill(); }
    d.addEventListener('toggle', () => { if (d.open) fill(); });
    box.append(d);
  }
  return box;
}

function repoURL(repo, endpoint) { return `${location.origin}/git/${repo.owner}/${repo.name}.git/${endpoint}`; }

/** repoFetch sends a NIP-98 signed request to one of the repository's endpoints and returns the answer's text; a refusal throws with the relay's words. */
export async function repoFetch(app, repo, method, endpoint, payload = '') {
  const url = repoURL(repo, endpoint);
  const init = { method, headers: { Authorization: await authorization(app.signer, url, method, payload) } };
  if (payload) { init.body = payload; init.headers['Content-Type'] = 'application/json'; }
  const resp = await fetch(url, init);
  const text = await resp.text();
  if (!resp.ok) throw new Error(text.trim() || resp.statusText);
  return text;
}

/** channelOf is the h tag a status or comment on pr carries: its channel's. */
function channelOf(pr) { const h = tag(pr, 'h'); return h ? [['h', h]] : []; }

// commentTpl is a NIP-22 comment on pr (root E/K/P); its parent (e/k/p)
// is pr, or the comment it answers.
function commentTpl(pr, content, extra = [], parent = pr) {
  return {
    kind: prK.comment, content,
    tags: [['E', pr.id, '', pr.pubkey], ['K', String(prK.pr)], ['P', pr.pubkey],
      ['e', parent.id, '', parent.pubkey], ['k', String(parent.kind)], ['p', parent.pubkey], ...channelOf(pr), ...extra],
  };
}

/** statusTpl is a NIP-34 status of kind on pr, as buzz pr's statuses are. */
export function statusTpl(pr, kind, content, extra = []) {
  const repo = repoOf(pr);
  return { kind, content, tags: [['e', pr.id, '', 'root'], ['a', tag(pr, 'a')], ['p', repo.owner], ['p', pr.pubkey], ...channelOf(pr), ...extra] };
}

/** openPR shows the pull request page as a modal dialog. */
export function openPR(pr, app) {
  const { subject, head, base } = describe(pr);
  const repo = repoOf(pr);
  const titleID = 'pr-title-' + pr.id.slice(0, 12);
  const dlg = el('dialog', { class: 'pr-page', 'aria-labelledby': titleID });
  const status = el('p', { class: 'pr-result', role: 'status' });
  const conv = el('section', { class: 'pr-conversation', 'aria-label': 'Conversation' });
  const head2 = el('p', { class: 'pr-meta' });
  let tip = '';
  let diffTip = ''; // the tip the diff shown was read at
  let diffLoading = !!repo; // until the first diff is read, threads wait for it
  const commits = el('section', { class: 'pr-commits', 'aria-label': 'Commits' }, el('h3', { text: 'Commits' }), el('p', { class: 'hint', text: 'Loading the commits…' }));
  // Each read of the diff and the commits (at open, and again when the
  // tip moves) is numbered; only the newest one's answers are shown: an
  // older one answering late (two pushes close together) would put back
  // the earlier tip's.
  let reads = 0;
  // loadCommits lists base..tip from the relay's git, for read number read.
  const loadCommits = (at, read) => {
    if (!repo || !at) { commits.lastChild.textContent = 'No commits: the pull request names no tip on this relay.'; return; }
    repoFetch(app, repo, 'GET', 'buzz-log?' + new URLSearchParams({ ref: at, base })).then((t) => {
      if (read !== reads) return;
      const ans = JSON.parse(t);
      const list = el('ol', { class: 'repo-log', 'aria-label': 'Commits of the pull request' }, ans.commits.map((c) => commitItem(c, app)));
      const n = ans.commits.length;
      const said = n ? `${n}${ans.more ? '+' : ''} commit${n === 1 ? '' : 's'} ${base} does not have${ans.more ? ' (the newest shown)' : ''}` : `${base} has every commit of this pull request (merged, or nothing to merge).`;
      commits.replaceChildren(el('h3', { text: 'Commits' }), el('p', { class: 'hint', text: said }), n ? list : null);
    }).catch((e) => { if (read === reads) commits.replaceChildren(el('h3', { text: 'Commits' }), el('p', { class: 'hint', text: 'No commits: ' + (e.message || e) })); });
  };
  // loadDiff reads the diff and the commits at the current tip; a push to
  // the head branch (a 1619) reads them again, unless a comment is being
  // written in the diff.
  const loadDiff = () => {
    if (!repo) return;
    diffTip = app.prs.state(pr).tip;
    const read = ++reads;
    loadCommits(diffTip, read);
    repoFetch(app, repo, 'GET', 'buzz-diff?pr=' + pr.id).then((d) => {
      if (read !== reads) return;
      files.replaceChildren(el('h3', { text: 'Files changed' }), diffView(parseDiff(d.slice(0, maxDiffChars)), lines));
      diffLoading = false;
      renderState();
    }).catch((e) => {
      if (read !== reads) return;
      files.replaceChildren(el('h3', { text: 'Files changed' }), el('p', { class: 'hint', text: 'No diff: ' + (e.message || e) }));
      diffLoading = false;
      renderState();
    });
  };
  const lineCtx = () => ({
    threads: lineThreads(app.prs.state(pr).comments, pr.id).threads, tip,
    name: (pk) => app.store.name(pk), body: (content, c) => body(content, { name: (pk) => app.store.name(pk), mentioned: tags(c, 'p') }),
    comment: async (anchor, content) => { await send(commentTpl(pr, content, anchor)); renderState(); },
    reply: async (anchor, content, parent) => { await send(commentTpl(pr, content, anchor, parent)); renderState(); },
  });
  const lines = (path, text) => fileLines(text, { ...lineCtx(), path });
  const renderState = () => {
    const st = app.prs.state(pr);
    tip = st.tip;
    if (diffTip && tip !== diffTip && ![...files.querySelectorAll('textarea')].some((x) => x.value.trim())) loadDiff();
    head2.replaceChildren(`${app.store.name(pr.pubkey)} wants to merge ${head} into ${base}`, st.tip ? ` · tip ${st.tip.slice(0, 7)}` : '', ' · ',
      el('span', { class: 'pr-status ' + st.status, text: st.status }));
    const { threads, other } = lineThreads(st.comments, pr.id);
    conv.replaceChildren(el('h3', { text: 'Conversation' }));
    for (const c of other) {
      const review = tag(c, 'buzz-review');
      const asked = tag(c, 'buzz-review-request');
      const where = [tag(c, 'buzz-file'), tag(c, 'buzz-line') && 'line ' + tag(c, 'buzz-line'), (tag(c, 'buzz-commit') || '').slice(0, 7)].filter(Boolean).join(' ');
      // The relay's merge counts an approval from a member other than
      // the author, and a person's for an agent's pull request; the page
      // says so of one that does not count, before Merge is pressed.
      const uncounted = review !== 'approve' ? '' : c.pubkey === pr.pubkey ? 'the author’s own'
        : app.store.agents.has(pr.pubkey) && app.store.agents.has(c.pubkey) ? 'an agent’s, on an agent’s pull request' : '';
      conv.append(el('article', { class: 'pr-comment', 'data-review': review || '', 'data-counts': uncounted ? 'no' : '' },
        el('p', { class: 'pr-comment-head' }, el('strong', { text: app.store.name(c.pubkey) }), ' ',
          review ? el('span', { class: 'badge', text: review === 'approve' ? 'approved' : 'changes requested' }) : null,
          uncounted ? ' ' : null, uncounted ? el('span', { class: 'badge warn', title: 'A merge needs an approval from a member other than the author, and a person’s for an agent’s pull request.', text: `does not count: ${uncounted}` }) : null,
          asked ? el('span', { class: 'badge', text: 'asked ' + app.store.name(asked) + ' to review' }) : null, ' ',
          where ? el('code', { text: where }) : null, ' ', el('time', { text: relTime(c.created_at) })),
        c.content ? body(c.content, { name: (pk) => app.store.name(pk), mentioned: tags(c, 'p') }) : null));
    }
    // Threads on lines the diff does not show (a file or line the
    // pull request no longer changes) are listed here, never lost; those
    // of a file not opened yet show when it is.
    for (const t of diffLoading ? [] : threads.values()) {
      const f = files.querySelector(`.pr-file[data-path="${CSS.escape(t.file)}"]`);
      if (f && (!f.querySelector('.pr-lines') || f.querySelector(`.dl[data-line="${t.line}"]`))) continue;
      for (const c of [...t.roots, ...t.replies]) {
        conv.append(el('article', { class: 'pr-comment', 'data-review': '' },
          el('p', { class: 'pr-comment-head' }, el('strong', { text: app.store.name(c.pubkey) }), ' ',
            el('code', { text: `${t.file} line ${t.line}` + (t.resolved ? ' (resolved)' : '') }), ' ', el('time', { text: relTime(c.created_at) })),
          c.content ? body(c.content, { name: (pk) => app.store.name(pk), mentioned: tags(c, 'p') }) : null));
      }
    }
    const ctx = lineCtx();
    for (const box of files.querySelectorAll('.pr-lines')) refreshThreads(box, { ...ctx, path: box.dataset.path });
    merge.hidden = st.status !== 'open';
    close.hidden = st.status !== 'open' && st.status !== 'draft';
  };
  const text = el('textarea', { 'aria-label': 'Review comment', rows: '3' });
  const act = (fn) => async () => {
    status.textContent = '';
    try { await fn(); text.value = ''; renderState(); } catch (e) { status.textContent = String(e.message || e); }
  };
  const send = async (tpl) => { const ev = await app.send(tpl); app.prs.add(ev); return ev; };
  const comment = el('button', { type: 'button', text: 'Comment', onclick: act(async () => {
    if (!text.value.trim()) throw new Error('Write a comment first.');
    await send(commentTpl(pr, text.value));
  }) });
  const approve = el('button', { type: 'button', text: 'Approve', onclick: act(() => send(commentTpl(pr, text.value, [['buzz-review', 'approve']]))) });
  const changes = el('button', { type: 'button', text: 'Request changes', onclick: act(() => send(commentTpl(pr, text.value, [['buzz-review', 'request-changes']]))) });
  const merge = el('button', { type: 'button', class: 'primary', text: 'Merge', onclick: act(async () => {
    const ans = JSON.parse(await repoFetch(app, repo, 'POST', 'buzz-merge', JSON.stringify({ pr: pr.id })));
    await send(statusTpl(pr, prK.merged, `Merged ${ans.head} into ${ans.base} as ${ans.merge_commit}`, [['merge-commit', ans.merge_commit], ['r', ans.merge_commit]]));
    status.textContent = `Merged ${ans.fast_forward ? '(fast-forward) ' : ''}as ${ans.merge_commit.slice(0, 7)}.`;
  }) });
  // Asking a member of the repository's channel (a person or an agent)
  // to review: a comment naming them in buzz-review-request, which wakes
  // an agent with the pull request in its prompt.
  const reviewer = el('select', { 'aria-label': 'Reviewer' }, el('option', { value: '', text: 'Ask someone to review…' }));
  const ch = app.store.channels.get(tag(pr, 'h') || '');
  for (const pk of ch ? ch.members.keys() : []) {
    if (pk !== pr.pubkey && pk !== app.me) reviewer.append(el('option', { value: pk, text: app.store.name(pk) }));
  }
  const askReview = el('button', { type: 'button', text: 'Request review', onclick: act(async () => {
    if (!reviewer.value) throw new Error('Pick whom to ask first.');
    await send(commentTpl(pr, text.value.trim() || 'Please review this pull request.', [['p', reviewer.value], ['buzz-review-request', reviewer.value]]));
  }) });
  const close = el('button', { type: 'button', text: 'Close pull request', onclick: act(() => send(statusTpl(pr, prK.closed, text.value))) });
  const files = el('section', { class: 'pr-diff', 'aria-label': 'Files changed' }, el('h3', { text: 'Files changed' }), el('p', { class: 'hint', text: 'Loading the diff…' }));
  dlg.append(
    el('header', { class: 'pr-header' }, el('h2', { id: titleID, text: subject }),
      el('button', { type: 'button', class: 'icon', 'aria-label': 'Close pull request page', text: '✕', onclick: () => dlg.close() })),
    head2,
    el('section', { class: 'pr-description', 'aria-label': 'Description' }, pr.content ? body(pr.content, { name: (pk) => app.store.name(pk), mentioned: [] }) : el('p', { class: 'hint', text: 'No description.' })),
    commits, files, conv,
    el('p', { class: 'hint', text: 'Click a line of the diff (or focus it and press Enter) to comment on it.' }),
    el('div', { class: 'pr-form' }, text,
      el('div', { class: 'pr-actions' }, comment, approve, changes, merge, close),
      el('div', { class: 'pr-actions' }, reviewer, askReview)),
    status);
  const unsubscribe = app.store.subscribe(renderState); // others' comments, reviews and statuses as they arrive
  dlg.addEventListener('close', () => { unsubscribe(); dlg.remove(); });
  document.body.append(dlg);
  renderState();
  dlg.showModal();
  if (!repo) { files.lastChild.textContent = commits.lastChild.textContent = 'This pull request names no repository of this relay.'; return dlg; }
  loadDiff();
  return dlg;
}
