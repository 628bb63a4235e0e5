// The channel view: header (name, topic, search, canvas, members), the
// live message feed and the composer. Forum channels list posts; their
// comments open as threads.

import { dmTitle } from './dm.js';
import { renderFeed } from './feed.js';
import { composer } from './composer.js';
import { body } from './render.js';
import { el, fullTime, typingLine } from './util.js';
import { parsePubkey, npub } from './signer.js';
import { manage } from './nip86.js';
import { query } from './bridge.js';
import { messageKinds } from './store.js';
import { JumpToLatest, FeedWindow, firstNew, nearEdgePx, windowStep, anchor, restore } from './history.js';
import { humanError } from './errors.js';
import { Tabs } from './tabs.js';
import { channelIntro, introView } from './guide.js';
import { openRepo } from './repoview.js';

const $ = (id) => document.getElementById(id);
/** windowMargin is how many read messages show above the first new one. */
const windowMargin = 20;

export class ChannelView {
  constructor(app) {
    this.app = app;
    this.id = '';
    this.cache = new Map();
    this.win = new FeedWindow();
    this.query = '';
    this.relayMembers = new Set(); // from NIP-86 listallowedpubkeys
    $('search').addEventListener('input', (e) => { this.query = e.target.value.trim().toLowerCase(); $('search-status').textContent = ''; this.render(); });
    $('search').addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); this.searchRelay(); } });
    $('members-btn').addEventListener('click', () => this.openMembers());
    this.tabs = new Tabs($('members-tabs'));
    $('members-close').addEventListener('click', () => $('members-dialog').close());
    $('canvas-btn').addEventListener('click', () => {
      const c = $('canvas');
      c.hidden = !c.hidden;
      $('canvas-btn').setAttribute('aria-expanded', String(!c.hidden));
      this.render();
    });
    $('repo-btn').addEventListener('click', () => {
      const repos = this.app.repos.inChannel(this.id);
      if (repos.length) openRepo(repos[0], this.app, repos);
    });
    $('older').addEventListener('click', () => this.older());
    $('notify-level').addEventListener('change', (e) => {
      this.app.prefs.set(this.id, e.target.value).catch((x) => this.app.flash(x));
    });
    // The window moves as the reader nears either end of it; older messages
    // come as they scroll up (the button stays for keyboards).
    $('feed').addEventListener('scroll', () => {
      const f = $('feed');
      if (this.query) return;
      if (f.scrollTop < nearEdgePx) this.older();
      else if (f.scrollHeight - f.scrollTop - f.clientHeight < nearEdgePx) this.newer();
    }, { passive: true });
    this.jump = new JumpToLatest($('feed'), { behind: () => !this.query && !this.win.latest, latest: () => this.latest() });
    $('add-member-form').addEventListener('submit', (e) => { e.preventDefault(); this.addMember(); });
    $('topic-form').addEventListener('submit', (e) => { e.preventDefault(); this.setTopic(); });
    $('invite-form').addEventListener('submit', (e) => { e.preventDefault(); this.createInvite(); });
  }

  show(id) {
    if (id === this.id) return;
    this.id = id;
    this.cache = new Map();
    $('feed').replaceChildren();
    delete $('feed').dataset.intro;
    $('search').value = '';
    $('search-status').textContent = '';
    this.query = '';
    this.composerFor = '';
    this.placed = false;
    this.win.reset();
    this.followed = true;
    this.ahead = false;
    this.app.reads.enter(id);
    $('empty').hidden = true;
    $('channel').hidden = false;
    this.render();
  }

  render() {
    if (!this.id) return;
    const s = this.app.store;
    const ch = s.channels.get(this.id);
    const name = ch?.type === 'dm' ? dmTitle(s, ch, this.app.me) : ch?.name || 'channel';
    const forum = ch?.type === 'forum';
    $('channel-name').textContent = (forum ? '≡ ' : '# ') + name;
    $('channel-topic').textContent = ch?.topic || ch?.about || '';
    $('feed').setAttribute('aria-label', `Messages in ${name}`);
    this.app.alerts.render(`${name} · buzz`);
    const level = $('notify-level');
    level.hidden = !ch?.members.has(this.app.me);
    if (level.value !== this.app.prefs.level(this.id)) level.value = this.app.prefs.level(this.id);

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
          // What the person sends shows at the bottom: a feed up in history comes down to it.
          send: (text, pks, files) => { if (!this.win.latest) this.jump.go(); return this.app.post(this.id, text, pks, forum, files); },
          maxBytes: () => this.app.maxEventBytes || 0,
          attach: { signer: () => this.app.signer, channel: () => this.id },
          typing: () => this.app.presence.typing(this.id),
          stopTyping: () => this.app.presence.stopTyping(),
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
      evs = all.filter((e) => s.content(e).text.toLowerCase().includes(this.query) || s.authorName(e).toLowerCase().includes(this.query));
    }
    const marker = this.app.reads.entryMarker(this.id);
    const newID = this.query ? '' : firstNew(evs, marker, (ev) => this.app.reads.counted(ev));
    let above = false, follow = true;
    if (!this.query) ({ evs, above, follow } = this.windowed(evs, newID));
    renderFeed($('feed'), evs, this.app, this.cache, { days: true, newID, follow });
    // A feed holds articles (WAI-ARIA); an empty channel's is a plain region until its first message.
    const role = evs.length ? 'feed' : 'region';
    if ($('feed').getAttribute('role') !== role) $('feed').setAttribute('role', role);
    // The button above the feed comes and goes as pages load; what the reader looks at stays put
    // (after the feed: older messages above give the scroll room to do so).
    const loading = this.app.loadingOlder === this.id;
    const olderHidden = !(loading || above || (this.app.older && this.app.older.id === this.id)) || Boolean(this.query);
    $('older').disabled = loading;
    $('older').textContent = loading ? 'Loading older messages…' : 'Load older messages';
    if ($('older').hidden !== olderHidden) {
      const f = $('feed');
      const bottom = f.scrollHeight - f.scrollTop - f.clientHeight < 40;
      const kept = anchor(f);
      $('older').hidden = olderHidden;
      if (bottom) f.scrollTop = f.scrollHeight; else restore(f, kept);
    }
    // Once the channel's history is in, open at the first new message, else at the newest;
    // a reader who has already scrolled away from the newest keeps their place.
    if (!this.placed && marker && this.app.historyFor === this.id) {
      this.placed = true;
      const f = $('feed');
      const line = f.querySelector(':scope > .new-sep');
      // A window that does not reach the newest was moved up to the line.
      const bottom = f.scrollHeight - f.scrollTop - f.clientHeight < 40;
      if (line && (bottom || !this.win.latest)) line.scrollIntoView({ block: 'start' });
      else if (bottom) f.scrollTop = f.scrollHeight;
    }
    this.jump.update();
    $('feed').setAttribute('aria-busy', this.app.loaded ? 'false' : 'true');
    $('feed').querySelector(':scope > .empty')?.remove();
    if (this.query && evs.length === 0) $('feed').append(el('p', { class: 'empty', text: `No message matches “${this.query}”.` }));
    this.intro(evs.length === 0 && !this.query && member && !gone && this.app.historyFor === this.id);

    const typing = typingLine(s.typingIn(this.id).map((pk) => s.name(pk)));
    if ($('typing').textContent !== typing) $('typing').textContent = typing;
    if ($('members-dialog').open) this.renderMembers();


    const repos = this.app.repos.inChannel(this.id);
    $('repo-btn').hidden = !repos.length;
    $('repo-btn').textContent = repos.length > 1 ? `Repositories (${repos.length})` : 'Repository';
    const cv = s.canvas.get(this.id);
    $('canvas-btn').hidden = !cv;
    if (cv && !$('canvas').hidden) $('canvas').replaceChildren(el('h3', { text: 'Canvas' }), body(cv.content, { name: (pk) => s.name(pk), mentioned: [] }));
  }

  /**
   * windowed returns the channel's messages evs as the feed shows them
   * (its window), whether the page holds more above, and whether the feed
   * sticks to its bottom: only while its window ends at the newest message
   * and did before this render. A window that has just come down to the
   * newest keeps the reader where they were, and one up in history takes
   * no live message until the reader comes back down.
   */
  windowed(evs, newID) {
    this.evs = evs;
    if (this.app.loadingOlder !== this.id) this.ahead = false; // the page it moved ahead of is in
    // Up to the first new message until the reader has been placed.
    if (!this.placed && newID) this.win.reach(evs, evs.findIndex((e) => e.id === newID) - windowMargin);
    if (this.app.revealing) this.reveal(evs, this.app.revealing);
    const follow = this.followed && this.win.latest;
    this.followed = this.win.latest;
    return { evs: this.win.slice(evs), above: this.win.bounds(evs)[0] > 0, follow };
  }

  /** intro puts an empty channel's opening lines (guide.js) in its feed, or takes them away. */
  intro(show) {
    const f = $('feed');
    const model = show ? channelIntro(this.app.store, this.app.me, this.id) : null;
    const manage = this.mayManage();
    const key = model ? JSON.stringify(model) + manage : '';
    if ((f.dataset.intro || '') === key) return;
    f.dataset.intro = key;
    f.querySelector(':scope > .feed-intro')?.remove();
    if (!model) return;
    f.append(introView(model, {
      invite: manage ? () => this.openMembers(['tab-invite', 'tab-add']) : null,
      agents: () => this.app.agentsPanel.open(),
    }));
  }

  /** older moves the window up through what the page holds and, when it holds no more, asks the relay for the next page. */
  older() {
    const evs = this.evs || [];
    if (this.win.older(evs)) {
      this.render();
      this.prefetch();
      return;
    }
    const more = this.app.older && this.app.older.id === this.id;
    if (this.ahead || !(more || this.app.loadingOlder === this.id)) return;
    // At the oldest the page holds: the window moves on, once, ahead of
    // the relay's next page (asked for now or already on its way), which
    // shows as it comes.
    this.ahead = true;
    this.win.older(evs, true);
    if (more) this.app.olderPage();
  }

  /**
   * prefetch asks the relay for its next page once the window's top is
   * within a step of the oldest message the page holds: a page from the
   * relay took 150–350 ms to show, one the page holds 50–80 ms, so the
   * reader scrolling on should find it held.
   */
  prefetch() {
    if (this.win.bounds(this.evs)[0] < windowStep && this.app.older && this.app.older.id === this.id) this.app.olderPage();
  }

  /** newer moves the window down towards the newest message, the live ones that came meanwhile included. */
  newer() {
    if (this.win.newer(this.evs || [])) this.render();
  }

  /** latest shows the newest messages again ("Jump to latest"). */
  latest() {
    if (this.win.latest && this.win.size <= windowStep) return;
    this.win.reset();
    this.render();
  }

  /** reveal moves the window to a message to be brought into view (app.revealing) that it does not show. */
  reveal(evs, id) {
    const i = evs.findIndex((e) => e.id === id);
    if (i >= 0) this.win.around(evs, i);
  }

  /** searchRelay asks the relay for older matches than the page holds (Enter in the search box). */
  async searchRelay() {
    const q = $('search').value.trim();
    if (q.length < 2) return;
    const id = this.id;
    $('search-status').textContent = 'Searching the relay…';
    try {
      const evs = await query(this.app.signer, [{ kinds: messageKinds, '#h': [id], search: q, limit: 100 }]);
      for (const ev of evs) this.app.store.add(ev, true);
      if (this.id === id) $('search-status').textContent = `${evs.length} ${evs.length === 1 ? 'match' : 'matches'} on the relay`;
    } catch (e) {
      $('search-status').textContent = 'Search failed: ' + e.message;
    }
  }

  /** openMembers opens the members dialog at the first of tabs (tab ids) this person may use, else at the member list. */
  openMembers(tabs = 'tab-members') {
    const want = [].concat(tabs);
    const s = this.app.store;
    const ch = s.channels.get(this.id);
    if (!ch) return;
    $('members-error').textContent = '';
    $('invites').hidden = true;
    $('members-title').textContent = ch.type === 'dm' ? dmTitle(s, ch, this.app.me) : '#' + ch.name;
    this.renderMembers();
    const fill = () => {
      const known = new Set([...s.profiles.keys(), ...this.relayMembers]);
      for (const c of s.channels.values()) for (const pk of c.members.keys()) known.add(pk);
      $('known-people').replaceChildren(...[...known].filter((pk) => !ch.members.has(pk))
        .map((pk) => el('option', { value: s.profiles.has(pk) ? s.name(pk) : npub(pk) })));
    };
    fill();
    // Only the tabs this person may use: channel admins add members and
    // set the topic; the relay's owner and admins make invite links.
    const controls = () => {
      const admin = this.mayManage();
      this.tabs.allow('tab-add', admin);
      this.tabs.allow('tab-topic', admin);
      this.tabs.allow('tab-invite', this.app.relayAdmin === true);
      $('members-hint').hidden = admin;
    };
    controls();
    this.tabs.select(want.find((id) => this.tabs.allowed(id)) || 'tab-members');
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
      this.listInvites();
      controls();
      this.renderMembers();
      // The invite tab exists only once the relay has said who may use it.
      if (want[0] !== 'tab-members' && $('members-dialog').open) this.tabs.select(want.find((id) => this.tabs.allowed(id)) || 'tab-members');
    }).catch(() => { this.app.notRelayAdmin = true; });
  }

  /** mayManage says whether this person adds and removes the open channel's members: its admins and the relay's. */
  mayManage() { return this.app.store.isAdmin(this.id, this.app.me) || this.app.relayAdmin === true; }

  /** renderMembers lists the channel's members, who is online or away first, with Remove for who may. */
  renderMembers() {
    const s = this.app.store;
    const ch = s.channels.get(this.id);
    if (!ch) return;
    const rank = { online: 0, away: 1, '': 2 };
    const rows = [...ch.members.entries()].map(([pk, role]) => ({ pk, role, status: s.status(pk), name: s.name(pk), agent: s.isAgent(pk) }))
      .sort((a, b) => rank[a.status] - rank[b.status] || a.name.localeCompare(b.name));
    const manage = this.mayManage();
    const key = manage + rows.map((r) => [r.pk, r.role, r.status, r.name, r.agent].join(':')).join('|');
    if ($('members-list').dataset.key === key) return;
    $('members-list').dataset.key = key;
    $('members-count').textContent = String(rows.length);
    $('members-list').replaceChildren(...rows.map((r) => this.memberRow(r, manage && r.pk !== this.app.me)));
  }

  memberRow({ pk, role, status, name, agent }, removable) {
    return el('li', { 'data-pk': pk },
      el('span', { class: 'member-name' },
        el('span', { class: 'presence-dot ' + (status || 'offline'), 'aria-hidden': 'true' }),
        el('span', { text: name }),
        // Agents stand out as in the feed (message.js), whatever their channel role.
        agent ? el('span', { class: 'badge', text: 'agent' }) : null,
        el('span', { class: 'presence-word', text: status || 'offline' })),
      el('span', { class: 'member-end' },
        el('span', { class: 'role', text: role === 'bot' ? 'agent' : role }),
        removable ? el('button', { type: 'button', class: 'small', text: 'Remove', 'aria-label': `Remove ${name} from the channel`, onclick: () => this.removeMember(pk) }) : null));
  }

  /** removeMember takes pk out of the channel (NIP-29 kind 9001); the relay allows it to the channel's admins. */
  async removeMember(pk) {
    $('members-error').textContent = '';
    try {
      await this.app.send({ kind: 9001, tags: [['h', this.id], ['p', pk]], content: '' });
    } catch (e) { $('members-error').textContent = 'Not removed: ' + e.message; }
  }

  /** listInvites shows the pending invites naming this channel that the relay lets this person revoke (NIP-86 listinvites), each with a Revoke button. */
  async listInvites() {
    const id = this.id;
    let rows;
    try {
      rows = await manage(this.app.signer, 'listinvites');
    } catch {
      $('invites').hidden = true;
      return;
    }
    if (this.id !== id || !Array.isArray(rows)) return;
    const s = this.app.store;
    const mine = rows.filter((r) => r && typeof r.id === 'string' && Array.isArray(r.channels) && r.channels.includes(id));
    $('invite-list').replaceChildren(...mine.map((r) => {
      const revoke = el('button', { type: 'button', text: 'Revoke', 'aria-label': 'Revoke invite ' + r.id });
      revoke.addEventListener('click', () => this.revokeInvite(r.id));
      return el('li', { 'data-invite': r.id },
        el('span', { text: `by ${s.name(r.created_by)}, until ${fullTime(r.expires_at)}` }), revoke);
    }));
    $('invites').hidden = mine.length === 0;
  }

  /** revokeInvite ends a pending invite (NIP-86 revokeinvite): its link stops working at once. */
  async revokeInvite(inviteID) {
    $('members-error').textContent = '';
    try {
      await manage(this.app.signer, 'revokeinvite', [inviteID]);
    } catch (e) {
      $('members-error').textContent = 'Invite not revoked: ' + e.message;
    }
    await this.listInvites();
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
      this.listInvites();
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

