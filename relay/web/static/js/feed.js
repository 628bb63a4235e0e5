// A keyed list of messages: each message's element is rebuilt only when
// what it shows changed, and never while it is being edited.

import { messageView, continues } from './message.js';
import { relTime } from './util.js';

/** signature is what a message's rendering depends on. */
function signature(ev, app, inThread) {
  const s = app.store;
  const rs = s.reactionsOf(ev.id).map((r) => r.emoji + r.count + (r.mine ? '*' : '') + [...r.pubkeys.keys()].join()).join('|');
  const ch = ev.tags.find((t) => t[0] === 'h')?.[1] || '';
  return [s.content(ev).text, s.name(ev.pubkey), s.isAgent(ev.pubkey), rs, inThread ? 0 : s.replies(ch, ev.id), relTime(ev.created_at)].join('\u0000');
}

/** renderFeed brings container's children in line with evs. */
export function renderFeed(container, evs, app, cache, { inThread = false } = {}) {
  const wanted = new Set(evs.map((e) => e.id));
  for (const [id, item] of cache) if (!wanted.has(id)) { item.el.remove(); cache.delete(id); }
  const atBottom = container.scrollHeight - container.scrollTop - container.clientHeight < 40;
  let prev = null;
  evs.forEach((ev, i) => {
    let item = cache.get(ev.id);
    const sig = signature(ev, app, inThread);
    if (!item || (item.sig !== sig && !item.el.dataset.editing)) {
      const fresh = messageView(ev, app, { inThread });
      fresh.setAttribute('aria-posinset', String(i + 1));
      if (item) item.el.replaceWith(fresh);
      item = { el: fresh, sig };
      cache.set(ev.id, item);
    }
    item.el.setAttribute('aria-posinset', String(i + 1));
    item.el.setAttribute('aria-setsize', String(evs.length));
    item.el.classList.toggle('grouped', continues(evs[i - 1], ev));
    const want = prev ? prev.nextSibling : container.firstChild;
    if (want !== item.el) container.insertBefore(item.el, want);
    prev = item.el;
  });
  if (atBottom) container.scrollTop = container.scrollHeight;
}
