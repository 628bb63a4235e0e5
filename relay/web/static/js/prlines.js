// Comments on the lines of a pull request's diff. A line comment is a
// NIP-22 comment (kind 1111) on the pull request that names the file
// (buzz-file), the line in the new file (buzz-line) and the commit it was
// written against (buzz-commit). A reply is a kind 1111 whose parent (e)
// is a comment of the thread; it carries the thread's anchor too, so each
// event says where it points on its own. Anyone in the conversation can
// mark a thread resolved or reopen it: a reply with buzz-resolved
// "resolved" or "open", the newest of which counts; a resolved thread
// shows collapsed. Only lines of the new file (added and context lines)
// take comments: those are the lines an anchor can name.
//
// numberLines and lineThreads are the model (run under node by
// TestPRLinesModule); fileLines renders a file's diff with its threads
// and the comment box. Event content is untrusted and never reaches
// innerHTML.

import { el, relTime } from './util.js';
import { tag } from './event.js';

/** Tag names of line comments (internal/workspace/tags.go spells them for the relay and the CLI). */
export const lineTag = { file: 'buzz-file', line: 'buzz-line', commit: 'buzz-commit', resolved: 'buzz-resolved' };

/**
 * numberLines reads one file's part of a unified diff into lines:
 * {text, kind: 'file'|'hunk'|'add'|'del'|'ctx', n} where n is the line's
 * number in the new file (0 for headers and removed lines).
 */
export function numberLines(text) {
  const out = [];
  let next = 0;
  let inHunk = false;
  for (const line of text.replace(/\n$/, '').split('\n')) {
    const m = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (m) { next = Number(m[1]); inHunk = true; out.push({ text: line, kind: 'hunk', n: 0 }); continue; }
    if (!inHunk || line.startsWith('diff ') || line.startsWith('\\')) {
      if (line.startsWith('diff ')) inHunk = false;
      out.push({ text: line, kind: 'file', n: 0 });
      continue;
    }
    if (line.startsWith('+')) out.push({ text: line, kind: 'add', n: next++ });
    else if (line.startsWith('-')) out.push({ text: line, kind: 'del', n: 0 });
    else out.push({ text: line, kind: 'ctx', n: next++ });
  }
  return out;
}

/**
 * lineThreads sorts the comments of pull request prID into line threads
 * and the rest: {threads: Map("file\nline" → {file, line, commit, root,
 * replies, resolved, resolvedBy}), other: [comments that belong to no
 * line thread]}. A thread's root is a comment on the pull request itself
 * (e = prID) with a file and a line; a reply joins the thread of the
 * comment it answers, however deep. Marks (buzz-resolved) are not replies.
 */
export function lineThreads(comments, prID) {
  const byID = new Map(comments.map((c) => [c.id, c]));
  const rootOf = (c) => {
    for (let i = 0; i < 64 && c; i++) {
      const parent = tag(c, 'e');
      if (!parent || parent === prID) return c;
      c = byID.get(parent);
    }
    return null;
  };
  const threads = new Map();
  const other = [];
  const sorted = [...comments].sort((a, b) => a.created_at - b.created_at);
  for (const c of sorted) {
    const root = rootOf(c);
    const file = root && tag(root, lineTag.file);
    const line = root && Number(tag(root, lineTag.line));
    if (!root || !file || !(line > 0)) { if (!tag(c, lineTag.resolved)) other.push(c); continue; }
    const key = file + '\n' + line;
    if (!threads.has(key)) threads.set(key, { file, line, commit: '', roots: [], replies: [], resolved: false, resolvedBy: '' });
    const t = threads.get(key);
    if (c === root) { t.roots.push(c); if (!t.commit) t.commit = tag(c, lineTag.commit) || ''; continue; }
    const mark = tag(c, lineTag.resolved);
    if (mark) { t.resolved = mark === 'resolved'; t.resolvedBy = t.resolved ? c.pubkey : ''; continue; }
    t.replies.push(c);
  }
  return { threads, other };
}

/** threadKey names a thread's place: file and line in the new file. */
export function threadKey(file, line) { return file + '\n' + line; }

// anchorTags are the tags every comment of a thread on file:line carries.
function anchorTags(file, line, commit) {
  return [[lineTag.file, file], [lineTag.line, String(line)], ...(commit ? [[lineTag.commit, commit]] : [])];
}

/**
 * fileLines renders one file's diff: each line a row, numbered lines of
 * the new file focusable (arrow keys move between them) and opening a
 * comment box on click or Enter, each line's threads under it.
 * ctx: {path, threads (from lineThreads), tip, name(pubkey), body(content,
 * ev) → node, reply(tpl extras, content, parentEvent) → Promise,
 * mark(thread, resolved) → Promise}.
 */
export function fileLines(text, ctx) {
  const box = el('div', { class: 'diff pr-lines', role: 'group', 'aria-label': 'Diff of ' + ctx.path, 'data-path': ctx.path });
  let first = true;
  for (const l of numberLines(text)) {
    const row = el('div', { class: 'dl ' + l.kind, text: l.text });
    box.append(row);
    if (!l.n) continue;
    row.dataset.line = String(l.n);
    row.tabIndex = first ? 0 : -1;
    first = false;
    row.setAttribute('role', 'button');
    row.setAttribute('aria-label', `Comment on ${ctx.path} line ${l.n}: ${l.text.slice(1)}`);
    const t = ctx.threads.get(threadKey(ctx.path, l.n));
    if (t) box.append(threadView(t, ctx));
  }
  const open = (row) => {
    const n = Number(row.dataset.line);
    const next = row.nextElementSibling;
    if (next && next.classList.contains('pr-thread')) {
      // The line has a thread (or a box open): answer there.
      const typing = next.querySelector('textarea');
      if (typing) { typing.focus(); return; }
      next.open = true;
      const reply = [...next.querySelectorAll('button')].find((b) => b.textContent === 'Reply');
      if (reply) reply.click();
      return;
    }
    const form = commentBox(`Comment on ${ctx.path} line ${n}`, (content) =>
      ctx.comment(anchorTags(ctx.path, n, ctx.tip), content), () => row.focus());
    row.after(form);
    form.querySelector('textarea').focus();
  };
  box.addEventListener('click', (e) => {
    const row = e.target.closest('.dl[data-line]');
    if (row && box.contains(row)) open(row);
  });
  box.addEventListener('keydown', (e) => {
    const row = e.target.closest && e.target.closest('.dl[data-line]');
    if (!row || e.target !== row) return;
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); open(row); return; }
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    const rows = [...box.querySelectorAll('.dl[data-line]')];
    const to = rows[rows.indexOf(row) + (e.key === 'ArrowDown' ? 1 : -1)];
    if (!to) return;
    e.preventDefault();
    row.tabIndex = -1;
    to.tabIndex = 0;
    to.focus();
  });
  return box;
}

// commentBox is a textarea with Comment and Cancel; send(content) posts.
function commentBox(label, send, done) {
  const text = el('textarea', { rows: '3', 'aria-label': label });
  const note = el('p', { class: 'pr-result', role: 'status' });
  const form = el('form', { class: 'pr-thread pr-newcomment' }, text,
    el('div', { class: 'pr-actions' }, el('button', { type: 'submit', class: 'primary', text: 'Comment' }),
      el('button', { type: 'button', text: 'Cancel', onclick: () => { form.remove(); done(); } })), note);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!text.value.trim()) { note.textContent = 'Write a comment first.'; return; }
    note.textContent = '';
    try { await send(text.value); form.remove(); } catch (err) { note.textContent = String(err.message || err); }
  });
  text.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.stopPropagation(); e.preventDefault(); form.remove(); done(); } });
  return form;
}

/**
 * refreshThreads brings the threads shown in box (a fileLines result) up
 * to ctx.threads: a thread that changed is drawn again, a new one is
 * inserted under its line; one with a reply being written is left as is.
 */
export function refreshThreads(box, ctx) {
  for (const t of ctx.threads.values()) {
    if (t.file !== ctx.path) continue;
    const row = box.querySelector(`.dl[data-line="${t.line}"]`);
    if (!row) continue;
    const sig = threadSig(t);
    let cur = row.nextElementSibling;
    if (cur && cur.classList.contains('pr-newcomment')) cur = cur.nextElementSibling;
    const shown = cur && cur.matches('details.pr-thread') ? cur : null;
    if (shown && shown.dataset.sig === sig) continue;
    if (shown && [...shown.querySelectorAll('textarea')].some((x) => x.value.trim())) continue;
    const fresh = threadView(t, ctx);
    if (shown) shown.replaceWith(fresh);
    else row.after(fresh);
  }
}

function threadSig(t) { return [...t.roots, ...t.replies].map((c) => c.id.slice(0, 8)).join(',') + ':' + t.resolved; }

// threadView is a line's thread: its comments and replies, a reply box,
// and Resolve / Reopen; resolved, it starts collapsed.
function threadView(t, ctx) {
  const all = [...t.roots, ...t.replies];
  const outdated = t.commit && ctx.tip && t.commit !== ctx.tip;
  const d = el('details', { class: 'pr-thread', 'data-resolved': String(t.resolved), 'data-sig': threadSig(t), 'aria-label': `Comments on ${t.file} line ${t.line}` });
  d.open = !t.resolved;
  d.append(el('summary', { text: `${all.length} comment${all.length === 1 ? '' : 's'} on line ${t.line}` +
    (t.resolved ? ` · resolved by ${ctx.name(t.resolvedBy)}` : '') + (outdated ? ` · on ${t.commit.slice(0, 7)}` : '') }));
  for (const c of all) {
    d.append(el('article', { class: 'pr-comment', 'data-id': c.id },
      el('p', { class: 'pr-comment-head' }, el('strong', { text: ctx.name(c.pubkey) }), ' ', el('time', { text: relTime(c.created_at) })),
      ctx.body(c.content, c)));
  }
  const last = all[all.length - 1];
  const tags = anchorTags(t.file, t.line, t.commit);
  const replyBtn = el('button', { type: 'button', text: 'Reply', onclick: () => {
    replyBtn.hidden = true;
    const form = commentBox(`Reply on ${t.file} line ${t.line}`, (content) => ctx.reply(tags, content, last), () => { replyBtn.hidden = false; replyBtn.focus(); });
    actions.before(form);
    form.querySelector('textarea').focus();
  } });
  const actions = el('div', { class: 'pr-actions' }, replyBtn,
    el('button', { type: 'button', text: t.resolved ? 'Reopen' : 'Resolve', onclick: () => ctx.reply([...tags, [lineTag.resolved, t.resolved ? 'open' : 'resolved']], t.resolved ? 'Reopened.' : 'Resolved.', last) }));
  d.append(actions);
  return d;
}
