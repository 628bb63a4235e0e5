// The thread view: a reply thread beside the channel (a full-screen panel
// on a phone), with its own composer. Escape closes it.

import { renderFeed } from './feed.js';
import { composer } from './composer.js';
import { messageView } from './message.js';

const $ = (id) => document.getElementById(id);

export class ThreadView {
  constructor(app) {
    this.app = app;
    this.root = null;
    this.cache = new Map();
    $('thread-close').addEventListener('click', () => this.close());
    document.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && this.root && !e.defaultPrevented && !document.querySelector('dialog[open]')) this.close();
    });
  }

  open(ev) {
    this.root = ev;
    this.cache = new Map();
    const feed = $('thread-feed');
    feed.replaceChildren();
    const c = composer({
      label: 'Reply in thread',
      members: () => this.app.store.members(this.app.current),
      send: (text, pks) => this.app.reply(this.root, text, pks),
    });
    $('thread-composer').replaceChildren(c.form);
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
    const feed = $('thread-feed');
    const head = feed.querySelector('.thread-root');
    const rootView = messageView(this.root, this.app, { inThread: true });
    rootView.classList.add('thread-root');
    if (head) head.replaceWith(rootView); else feed.prepend(rootView);
    let list = feed.querySelector('.thread-replies');
    if (!list) { list = document.createElement('div'); list.className = 'thread-replies'; feed.append(list); }
    renderFeed(list, s.channelMessages(this.app.current, { root: this.root.id }), this.app, this.cache, { inThread: true });
  }
}
