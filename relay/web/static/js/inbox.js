// The inbox: one list of what needs the person, from what the page holds
// (and a subscription of the messages that tag them): mentions, replies
// in threads they wrote in, approval requests (kind 46010) waiting for
// an answer they may give, reviews requested of them (an open pull
// request, kind 1618, naming them in a p tag, that they have not
// reviewed; it opens on the pull request's page), and direct messages. Unread first (after their
// channel's read marker, readstate.js, so reading anywhere reads it here
// too), then newest. Opening an item opens it in place (channel and
// thread); "Mark all read" moves each channel's marker, which the relay
// keeps for every device. Route: #/inbox.

import { el, relTime, fullTime } from './util.js';
import { K, messageKinds } from './store.js';
import { tag, threadOf } from './event.js';
import { plain } from './markdown.js';
import { mayAnswer } from './approval.js';
import { openPR } from './repo.js';

const $ = (id) => document.getElementById(id);
/** inboxLimit bounds the items shown, newest kept. */
const inboxLimit = 200;
/** mentionsLimit is how many of the messages that tag the person are asked for. */
const mentionsLimit = 300;

/**
 * inboxItems lists what needs me: [{ev, why, unread}], why one of
 * 'approval', 'review', 'dm', 'mention', 'reply'. lastRead(ch) is the
 * channel's read marker {t}; prs the pull requests' statuses and comments
 * (repo.js PRIndex). Approvals and reviews stay unread until answered.
 */
export function inboxItems(store, me, lastRead, prs) {
  const wrote = new Set(); // thread roots I wrote in
  for (const ev of store.events.values()) {
    if (ev.pubkey !== me || !messageKinds.includes(ev.kind)) continue;
    const { root } = threadOf(ev);
    wrote.add(root || ev.id);
  }
  const items = [];
  for (const ev of store.events.values()) {
    if (ev.pubkey === me || store.deleted(ev)) continue;
    const ch = tag(ev, 'h');
    const c = ch ? store.channels.get(ch) : null;
    if (c && store.gone(ch)) continue;
    let why = '';
    if (ev.kind === K.approvalRequest) {
      if (!mayAnswer(store, ev, me) || store.approvalClosed(ev)) continue;
      why = 'approval';
    } else if (ev.kind === K.pullRequest) {
      if (!prs) continue;
      const st = prs.state(ev);
      // Named on the pull request, or asked since in a comment (buzz pr request-review, the page's Request review).
      const asked = ev.tags.some((t) => t[0] === 'p' && t[1] === me) || st.comments.some((c) => tag(c, 'buzz-review-request') === me);
      if (!asked || st.status !== 'open' || st.comments.some((c) => c.pubkey === me && tag(c, 'buzz-review'))) continue;
      why = 'review';
    } else if (messageKinds.includes(ev.kind)) {
      const root = threadOf(ev).root;
      if (c && c.type === 'dm' && c.members.has(me)) why = 'dm';
      else if (ev.tags.some((t) => t[0] === 'p' && t[1] === me)) why = 'mention';
      else if (root && wrote.has(root)) why = 'reply';
    }
    if (!why) continue;
    const unread = why === 'approval' || why === 'review' || ev.created_at > lastRead(ch).t;
    items.push({ ev, why, unread });
  }
  items.sort((a, b) => (b.unread - a.unread) || (b.ev.created_at - a.ev.created_at) || (a.ev.id < b.ev.id ? 1 : -1));
  return items.slice(0, inboxLimit);
}

const whyWords = { approval: 'Approval waiting for you', review: 'Review requested', dm: 'Direct message', mention: 'Mentioned you', reply: 'Replied in your thread' };

export class InboxView {
  /** app: {store, me, reads, conn, reveal, intake}. */
  constructor(app) {
    this.app = app;
    this.shown = false;
    this.section = el('section', { id: 'inbox-view', class: 'inbox-view', hidden: true, 'aria-labelledby': 'inbox-title' });
    $('main').append(this.section);
    this.link = el('a', { href: '#/inbox', id: 'inbox-link', class: 'inbox-link', text: 'Inbox' });
    $('sidebar').querySelector('.side-head').before(this.link);
  }

  /**
   * start asks the relay for the messages that tag the person, beyond the
   * page's window. They go through app.intake like the page's own message
   * subscription: a live mention may arrive here first, and whichever
   * subscription adds it must also count it (the mention badge) and notify.
   */
  start() {
    this.app.conn.subscribe([{ kinds: messageKinds, '#p': [this.app.me], limit: mentionsLimit }], { onevent: (ev, stored) => this.app.intake(ev, stored) });
  }

  route(hash) {
    this.shown = hash === '#/inbox';
    this.section.hidden = !this.shown;
    return this.shown;
  }

  items() { return inboxItems(this.app.store, this.app.me, (ch) => this.app.reads.lastRead(ch), this.app.prs); }

  /** markAllRead moves the marker of every channel holding an unread item. */
  markAllRead() {
    for (const ch of new Set(this.items().filter((i) => i.unread && i.why !== 'approval' && i.why !== 'review').map((i) => tag(i.ev, 'h')))) if (ch) this.app.reads.mark(ch);
    this.app.store.changed();
  }

  render() {
    const items = this.items();
    const unread = items.filter((i) => i.unread).length;
    this.link.textContent = unread ? `Inbox (${unread})` : 'Inbox';
    this.link.setAttribute('aria-label', unread ? `Inbox, ${unread} unread` : 'Inbox');
    if (!this.shown) return;
    const s = this.app.store;
    const key = items.map((i) => i.ev.id + (i.unread ? '*' : '')).join('|');
    if (this.section.dataset.key === key && this.section.childElementCount) return;
    this.section.dataset.key = key;
    const rows = items.map(({ ev, why, unread: u }) => {
      const ch = tag(ev, 'h');
      const c = s.channels.get(ch);
      const where = c ? (c.type === 'dm' ? 'direct message' : '#' + c.name) : '';
      // A preview reads the message's markdown, as Slack's and Zulip's do, rather than showing its marks.
      const text = ev.kind === K.approvalRequest ? (ev.content || 'asks for approval')
        : ev.kind === K.pullRequest ? (tag(ev, 'subject') || '(no title)') : plain(s.content(ev).text);
      return el('li', { class: 'inbox-item' + (u ? ' unread' : ''), 'data-id': ev.id, 'data-why': why },
        el('button', { type: 'button', class: 'inbox-open', onclick: () => (why === 'review' ? openPR(ev, this.app) : this.app.reveal(ev)) },
          el('span', { class: 'inbox-why', text: whyWords[why] + (where ? ' · ' + where : '') }),
          el('span', { class: 'inbox-who', text: s.authorName(ev) }),
          el('time', { datetime: new Date(ev.created_at * 1000).toISOString(), title: fullTime(ev.created_at), text: relTime(ev.created_at) }),
          el('span', { class: 'inbox-text', text: text.length > 200 ? text.slice(0, 200) + '…' : text })));
    });
    this.section.replaceChildren(
      el('div', { class: 'inbox-head' }, el('h2', { id: 'inbox-title', text: 'Inbox' }),
        el('button', { type: 'button', id: 'inbox-read', disabled: unread === 0, onclick: () => this.markAllRead(), text: 'Mark all read' })),
      rows.length ? el('ul', { class: 'inbox-list' }, ...rows) : el('p', { class: 'empty', text: 'Nothing needs you. Mentions, replies in your threads, approvals, review requests and direct messages come here.' }));
  }
}
