// Direct messages: conversations of the person with one or more people
// or agents, each a private channel of type dm (kind 9007 with
// channel_type dm, then 9000 adding the others). The relay keeps a dm
// channel private for good, so only its members read it. The sidebar
// lists them apart, under "Direct messages", named after the others, with
// their unread counts; the dialog opens one from names, npubs or keys
// (the existing conversation with exactly those people, if there is one).

import { el, uuid4 } from './util.js';
import { parsePubkey, npub } from './signer.js';

const $ = (id) => document.getElementById(id);

/** isDMChannel reports whether c is a dm channel the person belongs to. */
export function isDMChannel(c, me) { return c.type === 'dm' && c.members.has(me); }

/** dmTitle names a dm after its other members, sorted ("yourself" when alone). */
export function dmTitle(store, c, me) {
  const others = [...c.members.keys()].filter((pk) => pk !== me).map((pk) => store.name(pk)).sort();
  return others.length ? others.join(', ') : 'yourself';
}

/** dmList lists the person's dm channels, newest metadata first: [{c, title}]. */
export function dmList(store, me) {
  return [...store.channels.values()].filter((c) => c.metaAt >= 0 && isDMChannel(c, me) && !store.gone(c.id))
    .map((c) => ({ c, title: dmTitle(store, c, me) })).sort((a, b) => a.title.localeCompare(b.title));
}

/**
 * resolvePeople reads a comma-separated list of names, npubs or hex keys
 * into pubkeys among the known people; errors name what was not found.
 */
export function resolvePeople(store, text, known = []) {
  const everyone = new Set([...store.profiles.keys(), ...known, ...[...store.channels.values()].flatMap((c) => [...c.members.keys()])]);
  const pks = [], errors = [];
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    let pk = '';
    try { pk = parsePubkey(part); } catch {
      const named = [...everyone].filter((k) => store.name(k).toLowerCase() === part.toLowerCase());
      if (named.length === 1) pk = named[0];
      else errors.push(named.length ? `several people are named ${part}; give their npub` : `nobody is named ${part}`);
    }
    if (pk && !pks.includes(pk)) pks.push(pk);
  }
  return { pks, errors };
}

/** existingDM finds the dm whose members are exactly me and pks, or ''. */
export function existingDM(store, me, pks) {
  const want = new Set([me, ...pks]);
  for (const { c } of dmList(store, me)) {
    if (c.members.size === want.size && [...want].every((pk) => c.members.has(pk))) return c.id;
  }
  return '';
}

/** dmTemplates are the events that open a dm with pks: the 9007, then one 9000 adding them. */
export function dmTemplates(id, pks) {
  return [
    { kind: 9007, tags: [['h', id], ['name', 'dm'], ['visibility', 'private'], ['channel_type', 'dm']], content: '' },
    { kind: 9000, tags: [['h', id], ...pks.map((pk) => ['p', pk]), ['role', 'member']], content: '' },
  ];
}

/** renderDMs fills the sidebar's direct-message list. app: {store, me, current, reads}. */
export function renderDMs(list, app) {
  const rows = dmList(app.store, app.me).map(({ c, title }) => ({ c, title, unread: c.id === app.current ? 0 : app.reads.unread(c.id) }));
  const key = app.current + '|' + rows.map(({ c, title, unread }) => [c.id, title, unread].join(':')).join('|');
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  const items = rows.map(({ c, title, unread }) => el('li', {},
    el('a', {
      href: '#/c/' + c.id, class: 'chan dm' + (unread ? ' unread' : ''), 'aria-current': c.id === app.current ? 'page' : false,
      'aria-label': `direct messages with ${title}${unread ? `, ${unread} unread` : ''}`,
    },
    el('span', { class: 'sigil', 'aria-hidden': 'true', text: '@' }),
    el('span', { class: 'chan-name', text: title }),
    unread ? el('span', { class: 'unread-count', 'aria-hidden': 'true', text: String(unread) }) : null)));
  if (items.length === 0) items.push(el('li', { class: 'empty', text: 'No conversations yet.' }));
  list.replaceChildren(...items);
}

/** open opens (or finds) the dm of the person with pks and goes to it. */
export async function openDM(app, pks) {
  const found = existingDM(app.store, app.me, pks);
  if (found) { location.hash = '#/c/' + found; return found; }
  const id = uuid4();
  const [create, add] = dmTemplates(id, pks);
  await app.send(create);
  if (pks.length) await app.send(add);
  location.hash = '#/c/' + id;
  return id;
}

/**
 * wireDMs adds the "Direct messages" section to the sidebar (after the
 * channel list) and its dialog, and returns the list to render into.
 */
export function wireDMs(app) {
  const head = el('div', { class: 'side-head' }, el('h2', { text: 'Direct messages' }),
    el('button', { type: 'button', id: 'new-dm', class: 'icon', 'aria-label': 'New direct message', text: '+' }));
  const list = el('ul', { id: 'dm-list', class: 'channel-list', 'aria-label': 'Direct messages' });
  $('channel-list').after(head, list);
  const input = el('input', { id: 'dm-people', list: 'dm-known', autocomplete: 'off', spellcheck: 'false', placeholder: 'Ada, agent-1' });
  const known = el('datalist', { id: 'dm-known' });
  const err = el('p', { id: 'dm-error', class: 'error', role: 'alert' });
  const form = el('form', { id: 'dm-form', class: 'stack', method: 'dialog' },
    el('h2', { id: 'dm-title', text: 'New direct message' }),
    el('label', { for: 'dm-people', text: 'To (names, npubs or keys, separated by commas)' }), input, known, err,
    el('div', { class: 'row' }, el('button', { type: 'submit', id: 'dm-open', text: 'Open conversation' }),
      el('button', { type: 'button', id: 'dm-cancel', text: 'Cancel' })));
  const dlg = el('dialog', { id: 'dm-dialog', class: 'dialog', 'aria-labelledby': 'dm-title' }, form);
  document.body.append(dlg);
  head.querySelector('button').addEventListener('click', () => {
    const s = app.store;
    const pks = new Set([...s.profiles.keys(), ...[...s.channels.values()].flatMap((c) => [...c.members.keys()])]);
    pks.delete(app.me);
    known.replaceChildren(...[...pks].map((pk) => el('option', { value: s.profiles.has(pk) ? s.name(pk) : npub(pk) })));
    err.textContent = '';
    dlg.showModal();
    input.focus();
  });
  dlg.querySelector('#dm-cancel').addEventListener('click', () => dlg.close());
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const { pks, errors } = resolvePeople(app.store, input.value);
    const others = pks.filter((pk) => pk !== app.me);
    if (errors.length || !others.length) { err.textContent = errors.join('; ') || 'Name at least one person or agent.'; return; }
    try {
      await openDM(app, others);
      input.value = '';
      dlg.close();
    } catch (x) { err.textContent = 'Not opened: ' + x.message; }
  });
  return list;
}
