// A keyed list of messages: each message's element is rebuilt only when
// what it shows changed, and never while it is being edited.

import { messageView, continues } from './message.js';
import { relTime, el } from './util.js';
import { rows, anchor, restore } from './history.js';
import { approvalSignature } from './approval.js';
import { transcriptSignature } from './turncard.js';

/** signature is what a message's rendering depends on. */
function signature(ev, app, inThread) {
  const s = app.store;
  const rs = s.reactionsOf(ev.id).map((r) => r.emoji + r.count + (r.mine ? '*' : '') + [...r.pubkeys.keys()].join()).join('|');
  const ch = ev.tags.find((t) => t[0] === 'h')?.[1] || '';
  // The turn cards: state, step and end of each agent's turn on it, and
  // whether the person may stop it.
  const turns = s.turns.of(ev.id).map((st) => [st.agent, st.state, st.step, st.by, st.cause, st.startedAt, s.waitingApproval(ev.id, st.agent)].join()).join('|') +
    (s.isAdmin(ch, app.me) ? '+a' : '') + transcriptSignature(ev, s);
  const w = s.working(ev);
  const replies = inThread ? '' : s.replies(ch, ev.id) + '/' + (app.reads ? app.reads.threadUnread(ch, ev) : 0);
  return [s.content(ev).text, s.authorName(ev), s.isAgent(ev.pubkey), rs, replies, relTime(ev.created_at),
    s.status(ev.pubkey), w.who.join() + w.busy, approvalSignature(s, ev, app.me), turns].join('\u0000');
}

/** outboxState marks a message the relay has not taken yet, or refused. */
function outboxState(art, app, id) {
  const st = app.outbox ? app.outbox.state(id) : '';
  const why = st === 'failed' ? app.outbox.errorOf(id) : '';
  if ((art.dataset.outbox || '') === st && (art.dataset.outboxWhy || '') === why) return;
  art.dataset.outbox = st;
  art.dataset.outboxWhy = why;
  art.querySelector('.outbox-state')?.remove();
  const box = art.querySelector('.msg-main') || art;
  if (st) box.append(el('p', { class: 'outbox-state', role: 'status', text: st === 'failed' ? 'Not sent: ' + why : 'Sending… kept here until the relay takes it' }));
}

/**
 * renderFeed brings container's children in line with evs. days adds day
 * separators, newID the "New" line before that message. Messages added
 * or removed around the reading position leave it where it is; a reader
 * at the bottom stays there if follow. A row that goes leaves nothing
 * behind: its element and cache entry go with it (its listeners are on
 * its own elements).
 */
export function renderFeed(container, evs, app, cache, { inThread = false, days = false, newID = '', follow = true } = {}) {
  const list = rows(evs, { days, newID });
  const wanted = new Set(list.map((r) => r.key));
  const atBottom = follow && container.scrollHeight - container.scrollTop - container.clientHeight < 40;
  const kept = atBottom ? null : anchor(container);
  for (const [id, item] of cache) if (!wanted.has(id)) { item.el.remove(); cache.delete(id); }
  let prev = null;
  let pos = 0;
  let prevEv = null;
  for (const row of list) {
    let item = cache.get(row.key);
    if (row.ev) {
      const ev = row.ev;
      const sig = signature(ev, app, inThread);
      if (!item || (item.sig !== sig && !item.el.dataset.editing)) {
        const fresh = messageView(ev, app, { inThread });
        if (item) item.el.replaceWith(fresh);
        item = { el: fresh, sig };
        cache.set(ev.id, item);
      }
      outboxState(item.el, app, ev.id);
      item.el.setAttribute('aria-posinset', String(++pos));
      item.el.setAttribute('aria-setsize', String(evs.length));
      item.el.classList.toggle('grouped', continues(prevEv, ev));
      prevEv = ev;
    } else {
      if (!item) {
        item = { el: row.make(), sig: '' };
        cache.set(row.key, item);
      }
      prevEv = null; // a day or "New" line starts a new group
    }
    const want = prev ? prev.nextSibling : container.firstChild;
    if (want !== item.el) container.insertBefore(item.el, want);
    prev = item.el;
  }
  if (atBottom) container.scrollTop = container.scrollHeight;
  else restore(container, kept);
}
