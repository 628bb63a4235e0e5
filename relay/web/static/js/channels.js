// The channel list: stream and forum channels with unread counts and,
// apart, mention counts (a muted channel keeps only the latter), and the
// form that creates a channel (kind 9007, as `buzz channels create`).

import { el } from './util.js';

/** renderChannels fills the sidebar list. app: {store, current, reads}. */
export function renderChannels(list, app) {
  const chans = [...app.store.channels.values()].filter((c) => c.name && c.metaAt >= 0 && !c.archived && !app.store.gone(c.id) && c.type !== 'dm')
    .sort((a, b) => a.name.localeCompare(b.name));
  // A muted channel shows no unread count, but its mentions still show.
  const shown = chans.map((c) => {
    const here = c.id === app.current;
    const muted = app.prefs.level(c.id) === 'mute';
    // In a direct-message channel every unread message is a mention: one badge.
    const quiet = here || muted || app.store.isDM(c.id);
    return { c, muted, unread: quiet ? 0 : app.reads.unread(c.id), mentions: here ? 0 : app.reads.mentions(c.id) };
  });
  // The list is rebuilt only when what it shows changed, so that a click
  // never lands on a link replaced under the pointer.
  const key = app.current + '|' + shown.map(({ c, unread, mentions, muted }) => [c.id, c.name, c.type, c.private, unread, mentions, muted].join(':')).join('|');
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  const items = shown.map(({ c, unread, mentions, muted }) => {
    const sigil = c.type === 'forum' ? '≡' : '#';
    const label = `${c.type === 'forum' ? 'forum' : 'channel'} ${c.name}${c.private ? ', private' : ''}${muted ? ', muted' : ''}` +
      `${unread ? `, ${unread} unread` : ''}${mentions ? `, ${mentions} ${mentions === 1 ? 'mention' : 'mentions'}` : ''}`;
    // The counts sit beside the link, not in it: the link's name says
    // them in words, and its visible text stays what the name starts with.
    const counts = unread || mentions ? el('span', { class: 'chan-counts', 'aria-hidden': 'true' },
      unread ? el('span', { class: 'unread-count', text: String(unread) }) : null,
      mentions ? el('span', { class: 'mention-count', text: '@' + mentions }) : null) : null;
    return el('li', { class: 'chan-item' },
      el('a', {
        href: '#/c/' + c.id, class: 'chan' + (unread || mentions ? ' unread' : '') + (muted ? ' muted' : ''), 'aria-label': label,
        'aria-current': c.id === app.current ? 'page' : false,
      },
      el('span', { class: 'sigil', 'aria-hidden': 'true', text: c.private ? '🔒' : sigil }),
      el('span', { class: 'chan-name', text: c.name })),
      counts);
  });
  if (items.length === 0) items.push(el('li', { class: 'empty', text: 'No channels yet. Create one.' }));
  list.replaceChildren(...items);
}

/** newChannelTemplate builds the kind 9007 event of `buzz channels create`. */
export function newChannelTemplate(id, { name, type, visibility, about }) {
  const tags = [['h', id], ['name', name], ['visibility', visibility], ['channel_type', type]];
  if (about) tags.push(['about', about]);
  return { kind: 9007, tags, content: '' };
}
