// The thread view: a reply thread beside the channel (a full-screen panel
// on a phone), with its own composer. Escape closes it.

import { renderFeed } from './feed.js';
import { composer } from './composer.js';
import { el, typingLine } from './util.js';

const $ = (id) => document.getElementById(id);

export class ThreadView {
  constructor(app) {
    this.app = app;
    this.root = null;
    this.cache = new Map();
    this.rootCache = new Map();
    $('thread-close').addEventListener('click', () => this.close());
    document.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && this.root && !e.defaultPrevented && !document.querySelector('dialog[open]')) this.close();
    });
  }

  open(ev) {
    this.root = ev;
    this.cache = new Map();
    this.rootCache = new Map();
    const feed = $('thread-feed');
    feed.replaceChildren(el('div', { class: 'thread-root' }), el('div', { class: 'thread-replies' }));
    const c = composer({
      label: 'Thread reply',
      placeholder: 'Reply in the thread',
      members: () => this.app.store.members(this.app.current),
      send: (text, pks, files) => this.app.reply(this.root, text, pks, files),
      attach: { signer: () => this.app.signer, channel: () => this.root.tags.find((t) => t[0] === 'h')?.[1] || this.app.current },
      typing: () => this.root && this.app.presence.typing(this.app.current, this.root),
      stopTyping: () => this.app.presence.stopTyping(),
    });
    $('thread-composer').replaceChildren(c.form);
    // On a phone the thread covers the channel: a modal dialog (WAI-ARIA
    // dialog pattern); beside the channel it is a complementary region.
    const narrow = window.matchMedia('(max-width: 720px)').matches;
    if (narrow) { $('thread').setAttribute('role', 'dialog'); $('thread').setAttribute('aria-modal', 'true'); } else { $('thread').removeAttribute('role'); $('thread').removeAttribute('aria-modal'); }
    $('thread').hidden = false;
    document.body.classList.add('thread-open');
    this.render();
    c.focus();
  }

  close() {
    if (!this.root) return;
    const id = this.root.id;
    this.root = null;
    $('thread').hidden = true;
    document.body.classList.remove('thread-open');
    const back = document.querySelector(`#feed article[data-id="${id}"]`);
    if (back) back.focus();
  }

  render() {
    if (!this.root) return;
    const s = this.app.store;
    const ch = this.root.tags.find((t) => t[0] === 'h')?.[1] || this.app.current;
    if (this.app.reading()) this.app.reads.markThread(ch, this.root.id);
    const feed = $('thread-feed');
    const root = s.deleted(this.root) ? [] : [this.root];
    renderFeed(feed.querySelector('.thread-root'), root, this.app, this.rootCache, { inThread: true });
    renderFeed(feed.querySelector('.thread-replies'), s.channelMessages(this.app.current, { root: this.root.id }), this.app, this.cache, { inThread: true });
    const typing = typingLine(s.typingIn(this.app.current, { root: this.root.id }).map((pk) => s.name(pk)));
    if ($('thread-typing').textContent !== typing) $('thread-typing').textContent = typing;
  }
}
