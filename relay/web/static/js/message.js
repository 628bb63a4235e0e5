// One message as an <article> in a feed: avatar, name (agents marked),
// relative time, body, reactions, the harness's working state, and the
// actions a person has on it (react, reply in thread, edit and delete of
// their own).

import { el, relTime, fullTime, initials, hue } from './util.js';
import { body } from './render.js';
import { tag, tags } from './event.js';
import { workingEmoji, K } from './store.js';
import { attachments, attachmentsView, withoutURLs } from './files.js';
import { approvalCard, approvalNotice, isPermissionRequest } from './approval.js';
import { turnCards } from './turncard.js';
import { prCard } from './repo.js';

const quickEmoji = ['👍', '❤️', '😂', '🎉', '✅', '🙏', '🔥', '🚀'];

// A message longer than longLines lines or longChars characters shows
// folded, with a Show more button.
const longLines = 25, longChars = 3000;

// unfolded remembers the long messages the person opened with Show more
// (message id, and -t in a thread), so that a rebuild (a reaction, an
// edit, a reply) leaves them open where the reader is.
const unfolded = new Set();

// groupSeconds is how close in time two messages of one author must be
// to show as one group (the second without avatar and name).
const groupSeconds = 5 * 60;

/** continues reports whether ev follows prev as part of one author's group. */
export function continues(prev, ev) {
  return Boolean(prev) && prev.pubkey === ev.pubkey && prev.kind === ev.kind && ev.kind !== K.diff &&
    ev.created_at - prev.created_at >= 0 && ev.created_at - prev.created_at < groupSeconds &&
    !isFailureNotice(prev) && !isFailureNotice(ev);
}

/** isFailureNotice reports whether ev is the harness's failure notice. */
export function isFailureNotice(ev) { return ev.content.startsWith('⚠️ I could not process'); }

/**
 * messageView renders ev. app: {store, me, react(ev, emoji), unreact(ev, reactionID),
 * openThread(ev), edit(ev, text), remove(ev)}; inThread hides the thread button.
 */
export function messageView(ev, app, { inThread = false } = {}) {
  const { store } = app;
  // A workflow's message goes by the workflow's name, for the member
  // whose workflow it is.
  const workflow = store.workflowOf(ev);
  const attributed = workflow && tag(ev, 'attributed');
  const name = store.authorName(ev);
  const agent = store.isAgent(ev.pubkey);
  const { text, edited } = store.content(ev);
  const labelID = 'm-' + ev.id.slice(0, 16) + (inThread ? '-t' : '');
  const art = el('article', {
    class: 'msg' + (agent ? ' agent' : '') + (isFailureNotice(ev) ? ' notice' : '') + (ev.pubkey === app.me ? ' mine' : ''),
    'aria-labelledby': labelID, tabindex: '0', 'data-id': ev.id,
  });
  const status = store.status(ev.pubkey);
  art.append(el('div', { class: 'avatar hue-' + hue(ev.pubkey), 'aria-hidden': 'true', text: initials(name) },
    status ? el('span', { class: 'presence-dot ' + status, title: status }) : null));
  const main = el('div', { class: 'msg-main' });
  const head = el('div', { class: 'msg-head' },
    el('span', { class: 'author', id: labelID, text: name }),
    agent ? el('span', { class: 'badge', text: 'agent', title: store.ownerOf(ev.pubkey) ? 'agent of ' + store.name(store.ownerOf(ev.pubkey)) : 'agent' }) : null,
    agent && store.ownerOf(ev.pubkey) ? el('span', { class: 'owned', text: 'owned by ' + store.name(store.ownerOf(ev.pubkey)) }) : null,
    workflow ? el('span', { class: 'badge', text: 'workflow' }) : null,
    attributed ? el('span', { class: 'owned', text: 'for ' + store.name(attributed) }) : null,
    isFailureNotice(ev) ? el('span', { class: 'badge warn', text: 'notice' }) : null,
    el('time', { datetime: new Date(ev.created_at * 1000).toISOString(), title: fullTime(ev.created_at), text: relTime(ev.created_at) }),
    edited ? el('span', { class: 'edited', text: '(edited)' }) : null);
  main.append(head);
  if (ev.kind === K.diff) {
    const t = (n) => ev.tags.find((x) => x[0] === n)?.[1] || '';
    const where = [t('repo'), t('commit').slice(0, 7) && '@ ' + t('commit').slice(0, 7), t('file')].filter(Boolean).join(' ');
    main.append(el('p', { class: 'diff-head' }, el('span', { class: 'badge', text: 'diff' }), ' ', where));
    if (t('description')) main.append(el('p', { class: 'diff-desc', text: t('description') }));
  }
  const files = attachments(ev);
  const shown = files.length ? withoutURLs(text, files) : text;
  const bodyBox = el('div', { class: 'msg-body' });
  if (ev.kind === K.pullRequest && app.prs) bodyBox.append(prCard(ev, app));
  else if (isPermissionRequest(ev)) bodyBox.append(approvalCard(ev, app));
  else if (shown || !files.length) bodyBox.append(body(shown, { name: (pk) => store.name(pk), mentioned: tags(ev, 'p') }, ev.kind));
  main.append(bodyBox);
  if (files.length) main.append(attachmentsView(files, app.signer));
  // A very long message is folded to a screenful until asked for.
  if (text.length > longChars || text.split('\n', longLines + 1).length > longLines) {
    const key = ev.id + (inThread ? '-t' : '');
    bodyBox.id = labelID + '-body';
    const more = el('button', { type: 'button', class: 'link show-more', 'aria-controls': bodyBox.id });
    const show = (open) => {
      bodyBox.classList.toggle('folded', !open);
      more.setAttribute('aria-expanded', String(open));
      more.textContent = open ? 'Show less' : 'Show more';
    };
    show(unfolded.has(key));
    more.addEventListener('click', () => {
      const open = !unfolded.has(key);
      if (open) unfolded.add(key); else unfolded.delete(key);
      show(open);
    });
    main.append(more);
  }

  // The harness's reactions mean "an agent has this message": shown as a
  // live state, not as chips. Its turn status, when it sends one, is the
  // turn card instead.
  const reactions = store.reactionsOf(ev.id);
  const working = store.working(ev);
  const cards = turnCards(ev, app);
  if (cards) main.append(cards);
  else if (working.who.length) {
    const who = working.who.map((pk) => store.name(pk)).join(', ');
    main.append(el('p', { class: 'working', role: 'status' }, el('span', { class: 'dots', 'aria-hidden': 'true' }), `${who} ${working.busy ? 'is working on this…' : 'has seen this…'}`));
  }
  const chips = el('div', { class: 'reactions', role: 'group', 'aria-label': 'Reactions' });
  for (const r of reactions) {
    if (workingEmoji[r.emoji] && !r.mine) continue;
    const names = [...r.pubkeys.keys()].map((pk) => store.name(pk)).join(', ');
    chips.append(el('button', {
      type: 'button', class: 'chip', 'aria-pressed': r.mine ? 'true' : 'false', title: names,
      'aria-label': `${r.emoji} ${r.count}: ${r.mine ? 'remove your reaction' : 'react with ' + r.emoji}`,
      onclick: () => (r.mine ? app.unreact(ev, r.mine) : app.react(ev, r.emoji)),
    }, el('span', { text: r.emoji }), el('span', { class: 'count', text: String(r.count) })));
  }
  if (chips.childElementCount) main.append(chips);

  const waiting = !inThread && app.openThread ? approvalNotice(store, ev, app.openThread.bind(app)) : null;
  if (waiting) main.append(waiting);
  if (!inThread && ev.kind !== K.forumComment) {
    const ch = ev.tags.find((t) => t[0] === 'h')?.[1] || '';
    const n = store.replies(ch, ev.id);
    const fresh = n && app.reads ? app.reads.threadUnread(ch, ev) : 0;
    if (n) {
      const label = `${n} ${n === 1 ? 'reply' : 'replies'}`;
      main.append(el('button', { type: 'button', class: fresh ? 'replies link unread' : 'replies link', onclick: () => app.openThread(ev) },
        label, fresh ? ' ' : null, fresh ? el('span', { class: 'replies-new', text: `${fresh} new` }) : null));
    }
  }

  const actions = el('div', { class: 'actions', role: 'toolbar', 'aria-label': 'Message actions' });
  const picker = el('div', { class: 'picker', role: 'group', 'aria-label': 'Pick a reaction', hidden: true },
    quickEmoji.map((e) => el('button', { type: 'button', 'aria-label': 'React with ' + e, text: e, onclick: () => { picker.hidden = true; app.react(ev, e); } })));
  actions.append(el('button', { type: 'button', 'aria-label': 'Add reaction', 'aria-expanded': 'false', text: '☺', onclick: (e) => { picker.hidden = !picker.hidden; e.currentTarget.setAttribute('aria-expanded', String(!picker.hidden)); } }));
  if (!inThread) actions.append(el('button', { type: 'button', 'aria-label': 'Reply in thread', text: '↩', onclick: () => app.openThread(ev) }));
  if (ev.pubkey === app.me) {
    actions.append(el('button', { type: 'button', 'aria-label': 'Edit message', text: '✎', onclick: () => startEdit(bodyBox, text, (t) => app.edit(ev, t)) }));
    actions.append(el('button', { type: 'button', 'aria-label': 'Delete message', text: '🗑', onclick: () => { if (window.confirm('Delete this message?')) app.remove(ev); } }));
  }
  main.append(actions, picker);
  art.append(main);
  longPress(art, () => art.classList.toggle('show-actions'));
  return art;
}

// longPressMs is how long a finger rests on a message to show its
// actions on a touch screen (where there is no hover).
const longPressMs = 450;

function longPress(target, then) {
  let timer = 0;
  const stop = () => { clearTimeout(timer); timer = 0; };
  target.addEventListener('pointerdown', (e) => {
    if (e.pointerType !== 'touch') return;
    stop();
    timer = setTimeout(() => { timer = 0; then(); }, longPressMs);
  });
  for (const ev of ['pointerup', 'pointercancel', 'pointermove', 'pointerleave']) target.addEventListener(ev, stop);
}

function startEdit(box, text, save) {
  const area = el('textarea', { class: 'edit-input', 'aria-label': 'Edited text' });
  area.value = text;
  const err = el('p', { class: 'composer-error', role: 'alert' });
  const old = [...box.childNodes];
  const art = box.closest('article');
  const done = () => { delete art.dataset.editing; box.replaceChildren(...old); };
  const commit = async () => {
    if (!area.value.trim()) { err.textContent = 'A message cannot be empty; delete it instead.'; return; }
    try { await save(area.value); done(); } catch (e) { err.textContent = 'Not saved: ' + (e.message || e); }
  };
  area.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); commit(); }
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); done(); }
  });
  box.replaceChildren(area, el('p', { class: 'hint', text: 'Enter saves, Escape cancels' }), err);
  art.dataset.editing = '1';
  area.focus();
}
