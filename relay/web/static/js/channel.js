// The channel view: header (name, topic, search, canvas, members), the
// live message feed and the composer. Forum channels list posts; their
// comments open as threads.

import { renderFeed } from './feed.js';
import { composer } from './composer.js';
import { body } from './render.js';
import { el } from './util.js';
import { parsePubkey, npub } from './signer.js';
import { manage } from './nip86.js';
import { query } from './bridge.js';
import { messageKinds } from './store.js';
import { humanError } from './errors.js';

const $ = (id) => document.getElementById(id);

export class ChannelView {
  constructor(app) {
    this.app = app;
    this.id = '';
    this.cache = new Map();
    this.query = '';
    this.relayMembers = new Set(); // from NIP-86 listallowedpubkeys
    $('search').addEventListener('input', (e) => { this.query = e.target.value.trim().toLowerCase(); $('search-status').textContent = ''; this.render(); });
    $('search').addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); this.searchRelay(); } });
    $('members-btn').addEventListener('click', () => this.openMembers());
    $('members-close').addEventListener('click', () => $('members-dialog').close());
    $('canvas-btn').addEventListener('click', () => {
      const c = $('canvas');
      c.hidden = !c.hidden;
      $('canvas-btn').setAttribute('aria-expanded', String(!c.hidden));
      this.render();
    });
    $('older').addEventListener('click', () => this.app.olderPage());
    $('add-member-form').addEventListener('submit', (e) => { e.preventDefault(); this.addMember(); });
    $('topic-form').addEventListener('submit', (e) => { e.preventDefault(); this.setTopic(); });
    $('invite-form').addEventListener('submit', (e) => { e.preventDefault(); this.createInvite(); });
  }

  show(id) {
    if (id === this.id) return;
    this.id = id;
    this.cache = new Map();
    $('feed').replaceChildren();
    $('search').value = '';
    $('search-status').textContent = '';
    this.query = '';
    this.composerFor = '';
    $('empty').hidden = true;
    $('channel').hidden = false;
    this.render();
  }

  render() {
    if (!this.id) return;
    const s = this.app.store;
    const ch = s.channels.get(this.id);
    const name = ch?.name || 'channel';
    const forum = ch?.type === 'forum';
    $('channel-name').textContent = (forum ? '≡ ' : '# ') + name;
    $('channel-topic').textContent = ch?.topic || ch?.about || '';
    $('feed').setAttribute('aria-label', `Messages in ${name}`);
    document.title = `${name} · buzz`;

    const member = ch && (ch.members.has(this.app.me) || this.app.me === this.app.owner);
    const gone = s.gone(this.id);
    const key = (gone ? 'g' : member ? 'm' : 'j') + name + forum + Boolean(ch) + Boolean(ch?.private) + this.app.loaded;
    if (this.composerFor !== key) {
      this.composerFor = key;
      if (gone) {
        $('composer-slot').replaceChildren(el('p', { class: 'join', role: 'status', text: 'This channel was deleted.' }));
      } else if (member) {
        const c = composer({
          label: forum ? `New post in ${name}` : `Message ${forum ? '' : '#'}${name}`,
          placeholder: forum ? 'Write a post' : `Message #${name}`,
          members: () => s.members(this.id),
          send: (text, pks) => this.app.post(this.id, text, pks, forum),
          maxBytes: () => this.app.maxEventBytes || 0,
        });
        $('composer-slot').replaceChildren(c.form);
      } else {
        // A private channel's metadata is hidden from non-members: a
        // channel the page cannot see is offered no Join button either.
        const err = el('p', { class: 'error', role: 'alert' });
        const closed = !ch || ch.private;
        const why = !ch ? (this.app.loaded ? 'This channel is private or does not exist: ask one of its members to add you.' : 'Loading the channel…')
          : ch.private ? 'This channel is private: ask one of its admins to add you.' : 'You are not a member of this channel yet.';
        $('composer-slot').replaceChildren(el('div', { class: 'join' },
          el('p', { text: why }),
          closed ? null : el('button', { type: 'button', text: 'Join channel', onclick: () => this.app.send({ kind: 9021, tags: [['h', this.id]], content: '' }).catch((e) => { err.textContent = e.message; }) }),
          err));
      }
    }

    let evs = s.channelMessages(this.id, { top: true });
    if (this.query) {
      const all = s.channelMessages(this.id);
      evs = all.filter((e) => s.content(e).text.toLowerCase().includes(this.query) || s.name(e.pubkey).toLowerCase().includes(this.query));
    }
    renderFeed($('feed'), evs, this.app, this.cache, { inThread: Boolean(this.query) && false });
    $('feed').setAttribute('aria-busy', this.app.loaded ? 'false' : 'true');
    $('feed').querySelector(':scope > .empty')?.remove();
    if (this.query && evs.length === 0) $('feed').append(el('p', { class: 'empty', text: `No message matches “${this.query}”.` }));

    const typing = s.typingIn(this.id).map((pk) => s.name(pk));
    $('typing').textContent = typing.length ? `${typing.join(', ')} ${typing.length === 1 ? 'is' : 'are'} typing…` : '';

    $('older').hidden = !(this.app.older && this.app.older.id === this.id) || Boolean(this.query);

    const cv = s.canvas.get(this.id);
    $('canvas-btn').hidden = !cv;
    if (cv && !$('canvas').hidden) $('canvas').replaceChildren(el('h3', { text: 'Canvas' }), body(cv.content, { name: (pk) => s.name(pk), mentioned: [] }));
  }

  /** searchRelay asks the relay for older matches than the page holds (Enter in the search box). */
  async searchRelay() {
    const q = $('search').value.trim();
    if (q.length < 2) return;
    const id = this.id;
    $('search-status').textContent = 'Searching the relay…';
    try {
      const evs = await query(this.app.signer, [{ kinds: messageKinds, '#h': [id], search: q, limit: 100 }]);
      for (const ev of evs) this.app.store.add(ev);
      if (this.id === id) $('search-status').textContent = `${evs.length} ${evs.length === 1 ? 'match' : 'matches'} on the relay`;
    } catch (e) {
      $('search-status').textContent = 'Search failed: ' + e.message;
    }
  }

  openMembers() {
    const s = this.app.store;
    const ch = s.channels.get(this.id);
    if (!ch) return;
    $('members-error').textContent = '';
    $('members-list').replaceChildren(...[...ch.members.entries()].map(([pk, role]) => el('li', {},
      el('span', { text: s.name(pk) + (s.online(pk) ? ' (online)' : '') }), el('span', { class: 'role', text: role === 'bot' ? 'agent' : role }))));
    const fill = () => {
      const known = new Set([...s.profiles.keys(), ...this.relayMembers]);
      for (const c of s.channels.values()) for (const pk of c.members.keys()) known.add(pk);
      $('known-people').replaceChildren(...[...known].filter((pk) => !ch.members.has(pk))
        .map((pk) => el('option', { value: s.profiles.has(pk) ? s.name(pk) : npub(pk) })));
    };
    fill();
    // Only what this person may do: channel admins add members and set
    // the topic; the relay's owner and admins make invite links.
    const controls = () => {
      const admin = s.isAdmin(this.id, this.app.me) || this.app.relayAdmin === true;
      $('add-member-form').hidden = !admin;
      $('topic-form').hidden = !admin;
      $('invite-form').hidden = this.app.relayAdmin !== true;
      $('members-hint').hidden = admin;
    };
    controls();
    $('topic-input').value = ch.topic;
    $('members-dialog').showModal();
    // The relay's own member list, for its owner and admins (NIP-86);
    // after one refusal the page stops asking.
    if (this.app.notRelayAdmin) return;
    manage(this.app.signer, 'listallowedpubkeys').then((rows) => {
      if (!Array.isArray(rows)) return;
      this.app.relayAdmin = true;
      for (const r of rows) if (r && /^[0-9a-f]{64}$/.test(r.pubkey)) this.relayMembers.add(r.pubkey);
      fill();
      controls();
    }).catch(() => { this.app.notRelayAdmin = true; });
  }

  async addMember() {
    const s = this.app.store;
    const v = $('add-member').value.trim();
    let pk = '';
    try {
      pk = parsePubkey(v);
    } catch {
      const byName = [...new Set([...s.profiles.keys(), ...this.relayMembers, ...[...s.channels.values()].flatMap((c) => [...c.members.keys()])])].filter((k) => s.name(k) === v);
      if (byName.length !== 1) { $('members-error').textContent = byName.length ? `several people are named ${v}; give their npub` : 'give an npub1…, 64 hex characters or the name of someone in the workspace'; return; }
      pk = byName[0];
    }
    try {
      await this.app.send({ kind: 9000, tags: [['h', this.id], ['p', pk], ['role', 'member']], content: '' });
      $('add-member').value = '';
      $('members-dialog').close();
    } catch (e) { $('members-error').textContent = e.message; }
  }

  /** createInvite asks the relay (NIP-86 createinvite, owner and admins only) for a link that admits a new person to this channel. */
  async createInvite() {
    $('members-error').textContent = '';
    $('invite-out').hidden = true;
    try {
      const r = await manage(this.app.signer, 'createinvite', [{ channels: [this.id] }]);
      if (!r || typeof r.url !== 'string') throw new Error('the relay sent no link');
      $('invite-link').value = r.url;
      $('invite-out').hidden = false;
      $('invite-link').select();
    } catch (e) {
      $('members-error').textContent = 'No invite: ' + humanError(e.message);
    }
  }

  async setTopic() {
    try {
      await this.app.send({ kind: 9002, tags: [['h', this.id], ['topic', $('topic-input').value]], content: '' });
      $('members-dialog').close();
    } catch (e) { $('members-error').textContent = e.message; }
  }
}
