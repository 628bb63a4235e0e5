// The workspace a signed-in person uses: the relay connection, the store,
// and the views wired together (app.js, the page's entry, loads it once
// it knows who the person is). Routes live in the fragment: #/c/<channel id>.

import { Store, K, messageKinds, onlineShownMs, approvalKinds } from './store.js';
import { RelayConn } from './relay.js';
import { forget, npub } from './signer.js';
import { renderChannels, newChannelTemplate } from './channels.js';
import { ChannelView } from './channel.js';
import { ThreadView } from './thread.js';
import { channelTag, threadTags, tag, threadOf } from './event.js';
import { uuid4, initials } from './util.js';
import { Outbox } from './outbox.js';
import { NetBanner } from './netbanner.js';
import { ReadState } from './readstate.js';
import { humanize } from './errors.js';
import { wireAccount } from './account.js';
import { wireKeys } from './keys.js';
import { tickTurnCards } from './turncard.js';
import { AgentsPanel } from './agents.js';
import { NotifyPrefs } from './prefs.js';
import { Alerts } from './alerts.js';
import { Presence } from './presence.js';
import { PRIndex, prKinds } from './repo.js';
import { RepoIndex, repoAnnouncement } from './repoview.js';
import { SearchView } from './search.js';
import { InboxView } from './inbox.js';
import { wireDMs, renderDMs } from './dm.js';
import { Guide } from './guide.js';
import { WorkflowsPanel } from './workflows.js';

const $ = (id) => document.getElementById(id);
const historyPage = 300; // events per page of a channel's history
const nip11TimeoutMs = 5000; // the relay document names the key channel state is signed with
const statusWords = { connecting: 'Connecting…', connected: 'Connected', authenticated: 'Connected', offline: 'Offline, reconnecting…', 'auth-failed': 'Sign-in refused by the relay' };

class App {
  constructor(signer) {
    this.signer = signer;
    this.me = signer.pubkey;
    this.store = new Store();
    this.store.me = this.me;
    this.owner = '';
    this.current = '';
    this.loaded = false;
    this.reads = new ReadState(this);
    this.prefs = new NotifyPrefs(this);
    this.alerts = new Alerts(this);
    this.presence = new Presence(this);
    this.prs = new PRIndex(); // pull requests' updates, statuses and comments (repo.js)
    this.repos = new RepoIndex(); // the relay's repository announcements, by channel (repoview.js)
    this.revealing = ''; // a message to bring into view once it is rendered (a notification's click)
    this.channelView = new ChannelView(this);
    this.thread = new ThreadView(this);
    this.agentsPanel = new AgentsPanel(this, $('agents-dialog'), $('agents-list'));
    this.workflows = new WorkflowsPanel(this);
    this.dmList = wireDMs(this);
    this.searchView = new SearchView(this);
    this.inbox = new InboxView(this);
    this.special = false; // the search view or the inbox is shown instead of a channel
    this.guide = new Guide(this, $('empty'));
    this.store.subscribe(() => this.render());
  }

  /** reading is the channel the person is reading: the open one while the tab shows, else none. */
  reading() { return document.visibilityState === 'hidden' ? '' : this.current; }

  /** intake takes an event from any subscription; a new live message may count, and notify. */
  intake(ev, stored) {
    if (!this.store.add(ev, stored) || stored || !messageKinds.includes(ev.kind)) return;
    this.reads.seen(ev);
    this.alerts.live(ev);
  }

  /**
   * observerFrame opens one of an agent's NIP-AO frames: encrypted by the
   * agent to this key (the MAC proves it was the agent or this person), a
   * frame JSON; the store keeps it only for an agent this person owns.
   */
  async observerFrame(ev) {
    if (ev.pubkey === this.me || ev.tags.find((t) => t[0] === 'agent')?.[1] !== ev.pubkey) return;
    let f;
    try { f = JSON.parse(await this.signer.decrypt(ev.pubkey, ev.content)); } catch { return; } // not for us, or not a frame
    this.store.frame(ev.pubkey, f);
  }

  /** reveal opens ev's channel (and thread) and brings ev into view, focused. */
  reveal(ev) {
    const ch = tag(ev, 'h');
    if (!ch) return;
    this.revealing = ev.id;
    if (location.hash !== '#/c/' + ch) location.hash = '#/c/' + ch;
    this.route();
    const root = this.store.events.get(threadOf(ev).root);
    if (root) this.openThread(root);
    this.store.changed();
  }

  /** lastRead is the person's read marker of a channel: {t, ids}. */
  lastRead(id) { return this.reads.lastRead(id); }

  async start() {
    // The connection exists before anything is awaited, so that what the
    // person does meanwhile is queued, not lost.
    const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host;
    this.banner = new NetBanner(this, $('notice'));
    this.conn = new RelayConn(url, this.signer, (state, detail = '') => {
      this.banner.status(state);
      if ((state === 'connected' || state === 'authenticated') && this.reads.loaded) this.reads.recountAll();
      if (state === 'authenticated' || (state === 'connected' && !this.presence.said)) this.presence.again();
      if (state === 'closed') {
        if (/not a relay member|only serves authenticated members|banned/.test(detail)) this.refused(detail);
        return;
      }
      $('status').textContent = (statusWords[state] || '') + (detail ? ': ' + detail : '');
      $('status').dataset.state = state;
      if (state === 'auth-failed' || (state === 'notice' && /not a relay member/.test(detail))) this.refused(detail);
    });
    try {
      const ctl = new AbortController();
      const timer = setTimeout(() => ctl.abort(), nip11TimeoutMs);
      const info = await fetch('/', { headers: { Accept: 'application/nostr+json' }, signal: ctl.signal }).then((r) => r.json());
      clearTimeout(timer);
      if (typeof info.pubkey === 'string') this.store.relayPubkey = info.pubkey;
      if (Number.isInteger(info.limitation?.max_content_length)) this.maxEventBytes = info.limitation.max_content_length;
    } catch { /* without NIP-11 channel state is taken from any signer; the relay refuses forged state anyway */ }
    const add = (ev, stored) => this.store.add(ev, stored);
    this.conn.subscribe([{ kinds: [K.groupMeta, K.groupMembers, K.channelTombstone] }, { kinds: [K.profile], limit: 500 }], { onevent: add });
    this.conn.subscribe([{ kinds: [K.reaction, K.deletion], limit: 2000 }], { onevent: add });
    this.conn.subscribe([{ kinds: [...messageKinds, K.edit, K.tombstone, K.canvas], limit: 1000 }], {
      onevent: (ev, stored) => this.intake(ev, stored), oneose: () => { this.loaded = true; this.store.changed(); },
    });
    const now = Math.floor(Date.now() / 1000);
    // The relay hands out each key's latest presence of the last 150 s with a REQ's stored events.
    this.conn.subscribe([{ kinds: [K.presence], since: now - Math.floor(onlineShownMs / 1000) }, { kinds: [K.typing, K.turnStatus], since: now }], {
      onevent: (ev, stored) => {
        const known = this.store.status(ev.pubkey) !== '';
        this.store.ephemeral(ev, Date.now(), stored);
        if (!stored) this.presence.heard(ev, known); // a newcomer's arrival is answered with ours
      },
    });
    this.conn.subscribe([{ kinds: [K.approvalRequest, K.approvalGrant, K.approvalDeny], limit: 500 }], { onevent: add });
    if (this.signer.decrypt) {
      // The transcripts of this person's agents: NIP-AO frames encrypted to them (the relay gives them to no one else).
      this.conn.subscribe([{ kinds: [K.observerFrame], '#p': [this.me], since: now }], { onevent: (ev) => this.observerFrame(ev) });
    }
    this.conn.subscribe([{ kinds: prKinds, limit: 1000 }], { onevent: (ev, stored) => { if (this.prs.add(ev)) this.store.changed(); add(ev, stored); } });
    this.conn.subscribe([{ kinds: [repoAnnouncement], limit: 500 }], { onevent: (ev) => { if (this.repos.add(ev, this.store.relayPubkey)) this.store.changed(); } });
    this.reads.start((ev) => this.prefs.take(ev));
    this.inbox.start();
    this.outbox = new Outbox(this.conn, this.me, () => { this.banner.render(); this.store.changed(); });
    for (const it of this.outbox.items) this.store.add(it.ev); // written before a reload, still on its way
    this.conn.start();
    this.outbox.flush();
    this.presence.start();
    // Coming back to the tab reads the open channel; leaving it stops that.
    document.addEventListener('visibilitychange', () => this.store.changed());
    setInterval(() => this.banner.render(), 1000);
    window.addEventListener('hashchange', () => this.route());
    this.route();
    setInterval(() => this.store.changed(), 30000); // relative times move on
    setInterval(() => { if (this.store.typing.size) this.store.changed(); }, 2000); // typing lines expire
    setInterval(() => tickTurnCards(document), 1000); // a working turn's time moves on
  }

  /**
   * loadChannel reads one channel's history beyond the workspace-wide
   * window: its messages, then the reactions, edits and deletions that
   * name them, then the deletions of those reactions. Live until the next
   * channel is opened.
   */
  loadChannel(id) {
    if (this.closeHistory) this.closeHistory();
    const closers = [];
    const chunk = 100; // ids per #e filter
    const follow = (ids, kinds, then) => {
      for (let i = 0; i < ids.length; i += chunk) {
        const got = [];
        closers.push(this.conn.subscribe([{ kinds, '#e': ids.slice(i, i + chunk) }], {
          onevent: (ev, stored) => { this.store.add(ev, stored); got.push(ev); },
          oneose: () => then && then(got),
        }));
      }
    };
    const msgs = [];
    const page = (filter, done) => {
      let n = 0, oldest = Infinity;
      const close = this.conn.subscribe([filter], {
        onevent: (ev, stored) => {
          this.intake(ev, stored);
          n++;
          oldest = Math.min(oldest, ev.created_at);
          if (messageKinds.includes(ev.kind)) msgs.push(ev.id);
        },
        oneose: () => {
          follow(msgs.splice(0), [K.reaction, K.deletion, K.edit, K.tombstone], (got) => {
            follow(got.filter((e) => e.kind === K.reaction).map((e) => e.id), [K.deletion]);
          });
          this.older = n >= historyPage ? { id, until: oldest } : null;
          if (!done) this.historyFor = id; // the first page is in
          else this.loadingOlder = '';
          this.store.changed();
          if (done) done(close);
        },
      });
      return close;
    };
    const kinds = [...messageKinds, K.edit, K.tombstone, K.canvas, ...approvalKinds];
    closers.push(page({ kinds, '#h': [id], limit: historyPage }));
    this.olderPage = () => {
      if (!this.older || this.older.id !== id) return;
      // From the oldest message held, whichever subscription brought it.
      let until = this.older.until;
      for (const mid of this.store.messages.get(id) || []) until = Math.min(until, this.store.events.get(mid).created_at);
      this.older = null;
      this.loadingOlder = id;
      page({ kinds, '#h': [id], until, limit: historyPage }, (close) => close());
    };
    this.closeHistory = () => closers.forEach((c) => c());
  }

  route() {
    this.special = this.searchView.route(location.hash) || this.inbox.route(location.hash);
    if (this.special && this.current) { this.current = ''; this.channelView.id = ''; this.thread.close(); }
    if (this.special) { this.render(); return; }
    const m = /^#\/c\/([0-9a-f-]{36})$/.exec(location.hash);
    if (!m && location.hash && location.hash !== '#/') return; // an in-page link, not a route
    const id = m ? m[1] : '';
    if (id !== this.current) {
      this.current = id;
      this.thread.close();
      if (id) { this.channelView.show(id); this.loadChannel(id); } else this.channelView.id = ''; // coming back to the same channel shows it again
      document.body.classList.remove('nav-open');
      $('menu').setAttribute('aria-expanded', 'false');
    }
    this.render();
  }

  render() {
    if (this.reading()) this.reads.mark(this.current);
    renderChannels($('channel-list'), this);
    renderDMs(this.dmList, this);
    if (!this.current) this.alerts.render('buzz');
    this.channelView.render();
    this.inbox.render();
    if (this.special) { $('channel').hidden = true; $('empty').hidden = true; } else if (!this.current) { $('channel').hidden = true; $('empty').hidden = false; this.guide.render(); }
    this.thread.render();
    if (this.revealing) {
      const art = document.querySelector(`#thread-feed article[data-id="${this.revealing}"]`) || document.querySelector(`#feed article[data-id="${this.revealing}"]`);
      if (art) {
        this.revealing = '';
        art.scrollIntoView({ block: 'center' });
        art.focus();
      }
    }
    const name = this.store.name(this.me);
    $('me').hidden = false;
    $('me').textContent = initials(name);
    $('me').setAttribute('aria-label', `${initials(name)}: your profile and key (${name})`);
  }

  /** refused explains a relay that does not admit this key, and what to do. */
  refused(why) {
    if (this.told) return;
    this.told = true;
    notify(`This relay does not let you in yet (${why}): your key is not a member. ` +
      `Send your public key to the relay's owner, or open the invite link you were given: ${npub(this.me)}`);
  }

  /** send signs a template with the person's key and publishes it. */
  async send(tpl) {
    const ev = await this.signer.sign(tpl);
    await this.conn.publish(ev).catch((e) => { throw humanize(e); });
    this.store.add(ev);
    return ev;
  }

  /**
   * queue signs what the person wrote and hands it to the outbox: it
   * shows at once and is sent until the relay takes it, so the composer
   * can be cleared without waiting for the relay.
   */
  async queue(tpl) {
    const ev = await this.signer.sign(tpl);
    this.outbox.add(ev);
    this.store.add(ev);
    return ev;
  }

  post(ch, text, pks, forum, files = []) {
    const tags = [['h', ch], ...pks.map((pk) => ['p', pk]), ...files];
    return this.queue({ kind: forum ? K.forumPost : K.stream, tags, content: text });
  }

  reply(parent, text, pks, files = []) {
    const ch = parent.tags.find((t) => t[0] === 'h')?.[1] || this.current;
    const forum = parent.kind === K.forumPost || parent.kind === K.forumComment;
    const tags = [['h', ch], ...threadTags(parent), ...pks.map((pk) => ['p', pk]), ...files];
    return this.queue({ kind: forum ? K.forumComment : K.stream, tags, content: text });
  }

  // A reaction to a channel's message, and its removal, carry the
  // channel's h tag: the relay refuses them without it and serves them
  // only to who may read the channel.
  react(ev, emoji) { return this.send({ kind: K.reaction, tags: [...channelTag(ev), ['e', ev.id]], content: emoji }).catch((e) => this.flash(e)); }
  unreact(ev, reactionID) { return this.send({ kind: K.deletion, tags: [...channelTag(ev), ['e', reactionID]], content: '' }).catch((e) => this.flash(e)); }
  /** answerApproval answers an agent's permission request with one of its options; the agent's harness accepts it from its owner or a channel admin. */
  answerApproval(req, option) {
    const kind = option.kind.startsWith('allow_') ? K.approvalGrant : K.approvalDeny;
    return this.send({ kind, tags: [...channelTag(req), ['e', req.id], ['p', req.pubkey], ['option', option.id]], content: '' });
  }
  edit(ev, text) {
    const ch = ev.tags.find((t) => t[0] === 'h')?.[1];
    return this.queue({ kind: K.edit, tags: [['h', ch], ['e', ev.id]], content: text });
  }
  remove(ev) {
    const ch = ev.tags.find((t) => t[0] === 'h')?.[1];
    return this.send({ kind: K.tombstone, tags: [['h', ch], ['e', ev.id]], content: '' }).catch((e) => this.flash(e));
  }
  // A stop request for the agent's turn on ev: the harness obeys the
  // agent's owner and the channel's admins, and its card names who stopped.
  stopTurn(ev) { return this.send({ kind: K.turnStop, tags: [...channelTag(ev), ['e', ev.id]], content: '' }).catch((e) => this.flash(e)); }
  openThread(ev) { this.thread.open(ev); }
  flash(e) { $('status').textContent = String(e.message || e); }
}

/** notify adds a line to the banner above the channel; the banner's ✕ dismisses it. */
function notify(text) {
  const n = $('notice');
  if (!n.querySelector('.dismiss')) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'dismiss icon';
    b.setAttribute('aria-label', 'Dismiss');
    b.textContent = '✕';
    b.addEventListener('click', () => { n.replaceChildren(); n.hidden = true; });
    n.append(b);
  }
  n.append(document.createElement('span'));
  n.lastChild.textContent = text;
  n.lastChild.className = 'banner-line';
  n.hidden = false;
}

function wireChrome(app) {
  document.querySelector('.skip').addEventListener('click', (e) => {
    e.preventDefault();
    document.querySelector('#composer-slot textarea')?.focus();
  });
  $('menu').addEventListener('click', () => {
    const open = document.body.classList.toggle('nav-open');
    $('menu').setAttribute('aria-expanded', String(open));
  });
  $('agents-btn').addEventListener('click', () => app.agentsPanel.open());
  $('workflows-btn').addEventListener('click', () => { if (app.current) app.workflows.open(app.current); });
  $('agents-close').addEventListener('click', () => $('agents-dialog').close());
  const dlg = $('channel-dialog');
  $('new-channel').addEventListener('click', () => { $('ch-error').textContent = ''; dlg.showModal(); $('ch-name').focus(); });
  $('ch-cancel').addEventListener('click', () => dlg.close());
  $('channel-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const name = $('ch-name').value.trim();
    if (!name) { $('ch-error').textContent = 'Give the channel a name.'; return; }
    const id = uuid4();
    try {
      await app.send(newChannelTemplate(id, { name, type: $('ch-type').value, visibility: $('ch-visibility').value, about: $('ch-about').value.trim() }));
      dlg.close();
      $('ch-name').value = '';
      $('ch-about').value = '';
      location.hash = '#/c/' + id;
    } catch (x) { $('ch-error').textContent = 'Not created: ' + x.message; }
  });
  const pd = $('profile-dialog');
  $('me').addEventListener('click', () => {
    const p = app.store.profiles.get(app.me);
    $('profile-name').value = p ? (p.display_name || p.name) : '';
    $('profile-npub').value = npub(app.me);
    $('profile-error').textContent = '';
    wireAccount(app.signer);
    pd.showModal();
  });
  $('profile-close').addEventListener('click', () => pd.close());
  $('sign-out').addEventListener('click', () => {
    if (app.signer.kind === 'key' && !window.confirm('Sign out? This browser forgets your key. Without a backup (Back up my key) or a sign-in link on another device, this account cannot be opened again.')) return;
    forget();
    location.hash = '';
    location.reload();
  });
  $('profile-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    try { await setName(app, $('profile-name').value.trim()); pd.close(); } catch (x) { $('profile-error').textContent = x.message; }
  });
}

function setName(app, name) {
  const old = app.store.profiles.get(app.me);
  let content = {};
  const ev = [...app.store.events.values()].find((e) => e.kind === 0 && e.pubkey === app.me && e.created_at === old?.at);
  try { if (ev) content = JSON.parse(ev.content); } catch { content = {}; }
  content.name = name;
  content.display_name = name;
  return app.send({ kind: K.profile, tags: [], content: JSON.stringify(content) });
}

/**
 * openWorkspace starts the workspace for signer: joined are the channels an
 * invite just made the person a member of, notice a line to show once,
 * name the name a new key was given at sign-in; wired is called once
 * the page's controls answer.
 */
export async function openWorkspace(signer, { joined = [], notice = '', name = '', wired = () => {} } = {}) {
  const app = new App(signer);
  window.buzz = app; // for the console
  wireChrome(app);
  wireKeys(app);
  wired();
  if (joined.length && !location.hash) history.replaceState(null, '', '#/c/' + joined[0]);
  await app.start();
  if (notice) notify(notice);
  if (name) setName(app, name).catch((e) => app.flash(e));
}
