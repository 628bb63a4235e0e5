// The store: every event the page has seen, and what follows from them
// (channels, members, profiles, edits, deletions, reactions, threads).
// Views subscribe and re-render on change; changes are batched per frame.

import { tag, tags, threadOf, attestedOwner } from './event.js';
import { TurnBook, turnKinds } from './turns.js';
import { Transcripts } from './transcript.js';

export const K = {
  profile: 0, deletion: 5, reaction: 7, stream: 9, addUser: 9000, removeUser: 9001, editMeta: 9002,
  tombstone: 9005, createGroup: 9007, joinRequest: 9021, streamV2: 40002, edit: 40003, diff: 40008,
  canvas: 40100, forumPost: 45001, forumComment: 45003, groupMeta: 39000, groupMembers: 39002, channelTombstone: 39008,
  presence: 20001, typing: 20002, appData: 30078, turnStatus: turnKinds.status, turnStop: turnKinds.stop, agentControl: 20102,
  approvalRequest: turnKinds.approvalRequest, approvalGrant: turnKinds.approvalGrant, approvalDeny: turnKinds.approvalDeny,
  pullRequest: 1618, observerFrame: 24200,
};

/** approvalKinds are an agent's permission requests and their answers. */
export const approvalKinds = [K.approvalRequest, K.approvalGrant, K.approvalDeny];

/** typingShownMs is how long a typing event (sent every 3 s while a turn runs or a person types) keeps its line. */
export const typingShownMs = 7000;
/** onlineShownMs is how long a presence "online" or "away" (sent every 60 s) counts. */
export const onlineShownMs = 150000;
/** hiddenRenderMs is how soon a hidden tab re-renders after a change. */
const hiddenRenderMs = 200;
/** presenceStates are the kind 20001 contents shown (an agent's harness says paused or not configured); anything else reads as offline. */
const presenceStates = new Set(['online', 'away', 'paused', 'not configured']);

/**
 * presenceDetail reads what an agent's harness adds to its presence: the
 * model and the day's usage (["usage", tokens, dollars]).
 */
function presenceDetail(ev) {
  const model = (ev.tags.find((t) => t[0] === 'model')?.[1] || '').slice(0, 100);
  const u = ev.tags.find((t) => t[0] === 'usage');
  const tokens = u && /^\d{1,15}$/.test(u[1] || '') ? Number(u[1]) : 0;
  const cost = u && /^\d{1,9}(\.\d{1,6})?$/.test(u[2] || '') ? Number(u[2]) : null;
  return { model, tokens, cost };
}

/** messageKinds are the kinds shown as messages, as `buzz messages get` reads them. */
export const messageKinds = [K.stream, K.streamV2, K.diff, K.forumPost, K.forumComment];

/** workingEmoji are the reactions the harness sets while a turn runs. */
export const workingEmoji = { '👀': 'seen', '💬': 'working' };

export class Store {
  constructor() {
    this.events = new Map();
    this.channels = new Map(); // id → channel
    this.profiles = new Map(); // pubkey → {name, display_name, bot, at}
    this.messages = new Map(); // channel → Set of ids
    // thread root id → Set of ids of the messages in its thread: reply
    // counts and pending approvals, looked for under each message shown,
    // walk the thread, not the channel.
    this.threads = new Map();
    this.edits = new Map(); // target → newest valid edit event
    this.deletes = new Map(); // target → [deletion events]
    this.reactions = new Map(); // target → Map reaction id → event
    this.canvas = new Map(); // channel → newest canvas event
    this.editsAll = new Map(); // target → edit events
    this.answers = new Map(); // permission request → the grants and denies naming it
    // id → the relay's order, to order events of the same second: what a
    // REQ brings stored comes newest stored first and counts down from 0,
    // what comes live (or is sent from here) counts up. Never the id.
    this.arrival = new Map();
    this.storedSeq = 0;
    this.liveSeq = 0;
    this.typing = new Map(); // channel → Map pubkey → {at: local time (ms) of the last typing event, root: its thread or ''}
    // channel|pubkey → created_at of their newest live message there. The
    // message ends its author's typing line at once, and a typing event
    // made in an earlier second (on its way from another connection: the
    // harness types while the agent replies through the CLI) does not
    // bring it back. One of the same second may: a person typing on.
    this.spoke = new Map();
    this.presence = new Map(); // pubkey → {status: online, away or offline, at (ms)}
    this.agents = new Map(); // agent pubkey → owner pubkey, from verified NIP-OA auth tags
    this.turns = new TurnBook(); // message id → agent → newest turn status
    this.transcripts = new Map(); // agent → its owner's decrypted NIP-AO frames (Transcripts)
    this.approvals = new Map(); // message id → Set of approval request ids naming it (e)
    this.approvalAnswered = new Set(); // approval request ids a grant or denial names (e)
    this.attested = new Set(); // auth tags already checked, as pubkey|tag
    this.relayPubkey = '';
    this.me = '';
    this.listeners = new Set();
    this.queued = false;
  }

  subscribe(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }

  changed() {
    if (this.queued) return;
    this.queued = true;
    const run = () => {
      this.queued = false;
      for (const fn of this.listeners) fn();
    };
    // A hidden tab gets no animation frames; its title and favicon still
    // follow what arrives (the browser runs its timers at most once a second).
    if (typeof document !== 'undefined' && document.visibilityState === 'hidden') setTimeout(run, hiddenRenderMs);
    else requestAnimationFrame(run);
  }

  channel(id) {
    let ch = this.channels.get(id);
    if (!ch) {
      ch = { id, name: '', about: '', topic: '', type: 'stream', private: false, archived: false, members: new Map(), metaAt: -1, membersAt: -1, deletedAt: -1 };
      this.channels.set(id, ch);
    }
    return ch;
  }

  /** add takes one event from the relay (stored: sent before the subscription's EOSE); it reports whether anything changed. */
  add(ev, stored = false) {
    if (this.events.has(ev.id)) return false;
    this.events.set(ev.id, ev);
    this.arrival.set(ev.id, stored ? -(++this.storedSeq) : ++this.liveSeq);
    this.attestation(ev);
    switch (ev.kind) {
      case K.profile: {
        const old = this.profiles.get(ev.pubkey);
        if (old && old.at >= ev.created_at) return false;
        let p = {};
        try { p = JSON.parse(ev.content); } catch { /* a profile that is not JSON keeps no fields */ }
        if (p === null || typeof p !== 'object') p = {};
        const str = (v) => (typeof v === 'string' ? v.slice(0, 100) : '');
        this.profiles.set(ev.pubkey, { name: str(p.name), display_name: str(p.display_name), about: str(p.about), bot: p.bot === true, at: ev.created_at });
        break;
      }
      case K.groupMeta: {
        if (this.relayPubkey && ev.pubkey !== this.relayPubkey) return false;
        const ch = this.channel(tag(ev, 'd') || '');
        if (ch.metaAt > ev.created_at) return false;
        ch.metaAt = ev.created_at;
        ch.name = tag(ev, 'name') || '';
        ch.about = tag(ev, 'about') || '';
        ch.topic = tag(ev, 'topic') || '';
        ch.type = tag(ev, 'channel_type') || tag(ev, 't') || 'stream';
        ch.private = ev.tags.some((t) => t[0] === 'private');
        ch.archived = tag(ev, 'archived') === 'true';
        break;
      }
      case K.groupMembers: {
        if (this.relayPubkey && ev.pubkey !== this.relayPubkey) return false;
        const ch = this.channel(tag(ev, 'd') || '');
        if (ch.membersAt > ev.created_at) return false;
        ch.membersAt = ev.created_at;
        ch.members = new Map();
        for (const t of ev.tags) if (t[0] === 'p' && /^[0-9a-f]{64}$/.test(t[1] || '')) ch.members.set(t[1], t[3] || 'member');
        break;
      }
      case K.channelTombstone: {
        // The relay's record of a deleted channel; a newer 39000 means it was made again.
        if (this.relayPubkey && ev.pubkey !== this.relayPubkey) return false;
        const ch = this.channel(tag(ev, 'd') || '');
        ch.deletedAt = Math.max(ch.deletedAt, ev.created_at);
        break;
      }
      case K.edit: {
        // Whether the editor wrote the target is checked when it is shown.
        const target = tag(ev, 'e');
        if (!target) return false;
        this.editList(target).push(ev);
        break;
      }
      case K.deletion: case K.tombstone:
        for (const id of tags(ev, 'e')) {
          if (!this.deletes.has(id)) this.deletes.set(id, []);
          this.deletes.get(id).push(ev);
        }
        break;
      case K.reaction: {
        const targets = tags(ev, 'e');
        const target = targets[targets.length - 1];
        if (!target) return false;
        if (!this.reactions.has(target)) this.reactions.set(target, new Map());
        this.reactions.get(target).set(ev.id, ev);
        break;
      }
      case K.approvalGrant: case K.approvalDeny:
        for (const id of tags(ev, 'e')) {
          this.approvalAnswered.add(id);
          if (!this.answers.has(id)) this.answers.set(id, []);
          this.answers.get(id).push(ev);
        }
        break;
      case K.canvas: {
        const ch = tag(ev, 'h');
        const old = this.canvas.get(ch);
        if (!old || old.created_at <= ev.created_at) this.canvas.set(ch, ev);
        break;
      }
      case K.approvalRequest:
        for (const id of tags(ev, 'e')) {
          if (!this.approvals.has(id)) this.approvals.set(id, new Set());
          this.approvals.get(id).add(ev.id);
        }
        if (!ev.tags.some((t) => t[0] === 'option')) break;
        // An agent's permission request (it names options) shows among
        // the messages, as a card; a workflow step's does not.
        // falls through
      default:
        // A pull request shows among its repository's channel's messages, as a card (repo.js).
        if (messageKinds.includes(ev.kind) || ev.kind === K.approvalRequest || ev.kind === K.pullRequest) {
          const ch = tag(ev, 'h');
          if (!ch) return false;
          if (!this.messages.has(ch)) this.messages.set(ch, new Set());
          this.messages.get(ch).add(ev.id);
          const root = threadOf(ev).root;
          if (root) {
            if (!this.threads.has(root)) this.threads.set(root, new Set());
            this.threads.get(root).add(ev.id);
          }
          if (!stored) {
            // A live message ends its author's typing there.
            this.typing.get(ch)?.delete(ev.pubkey);
            const k = ch + '|' + ev.pubkey;
            this.spoke.set(k, Math.max(this.spoke.get(k) ?? 0, ev.created_at));
          }
        }
    }
    this.changed();
    return true;
  }

  /** forget drops a message the person discarded before the relay took it. */
  forget(id) {
    const ev = this.events.get(id);
    if (!ev) return;
    this.events.delete(id);
    this.arrival.delete(id);
    this.messages.get(tag(ev, 'h'))?.delete(id);
    this.threads.get(threadOf(ev).root)?.delete(id);
    const target = tag(ev, 'e');
    if (ev.kind === K.edit && target) this.editsAll.set(target, (this.editsAll.get(target) || []).filter((e) => e.id !== id));
    this.changed();
  }

  /** attestation records the owner of an agent from a verified NIP-OA tag, checking each tag once. */
  attestation(ev) {
    const t = ev.tags.find((x) => x[0] === 'auth' && x.length === 4);
    if (!t || this.agents.has(ev.pubkey)) return;
    const key = ev.pubkey + '|' + t.join('|');
    if (this.attested.has(key)) return;
    this.attested.add(key);
    const owner = attestedOwner(ev);
    if (owner) this.agents.set(ev.pubkey, owner);
  }

  /** answersOf lists the grants and denies that name request id. */
  answersOf(id) { return this.answers.get(id) || []; }

  /**
   * waitingApproval reports whether agent asked for an approval on
   * message id (an approval request e-tagging it) that no grant or denial
   * answers yet, nor its author withdrew.
   */
  waitingApproval(id, agent) {
    for (const rid of this.approvals.get(id) || []) {
      const req = this.events.get(rid);
      if (req && req.pubkey === agent && !this.approvalClosed(req) && !this.deleted(req)) return true;
    }
    return false;
  }

  /**
   * approvalClosed reports whether request req is answered. An agent's
   * permission request (it names options) is closed only by the answer
   * its harness signs as the agent: anyone may sign a grant naming it.
   */
  approvalClosed(req) {
    if (!req.tags.some((t) => t[0] === 'option')) return this.approvalAnswered.has(req.id);
    return this.answersOf(req.id).some((a) => a.pubkey === req.pubkey);
  }

  /**
   * frame takes one decrypted observer frame of agent's, sent to this
   * page's key: only an agent this person owns (its NIP-OA attestation)
   * writes a transcript here.
   */
  frame(agent, f) {
    if (!this.me || this.ownerOf(agent) !== this.me) return;
    if (!this.transcripts.has(agent)) this.transcripts.set(agent, new Transcripts());
    if (this.transcripts.get(agent).add(f)) this.changed();
  }

  /** transcriptOf is agent's transcript of the turn message id triggered, or null. */
  transcriptOf(agent, id) { return this.transcripts.get(agent)?.turn(id) || null; }

  /** ownerOf returns the attested owner of an agent key, or ''. */
  ownerOf(pk) { return this.agents.get(pk) || ''; }

  /** ephemeral takes a presence, typing or turn status event (not stored by the relay; stored says a presence came with a REQ's stored events, as the relay keeps the latest for a while). */
  ephemeral(ev, now = Date.now(), stored = false) {
    if (ev.kind === K.typing) {
      const ch = tag(ev, 'h');
      if (!ch || ev.pubkey === this.me) return;
      if (ev.created_at < (this.spoke.get(ch + '|' + ev.pubkey) ?? -1)) return;
      if (!this.typing.has(ch)) this.typing.set(ch, new Map());
      this.typing.get(ch).set(ev.pubkey, { at: now, root: threadOf(ev).root });
    } else if (ev.kind === K.presence) {
      const old = this.presence.get(ev.pubkey);
      if (old && old.created_at > ev.created_at) return;
      // One the relay kept (stored) counts from when it was made, not from now.
      const at = stored ? Math.min(now, ev.created_at * 1000) : now;
      this.presence.set(ev.pubkey, { status: presenceStates.has(ev.content) ? ev.content : 'offline', at, created_at: ev.created_at, ...presenceDetail(ev) });
    } else if (ev.kind === K.turnStatus) {
      if (!this.turns.add(ev)) return;
    } else return;
    this.changed();
  }

  /** typingIn lists who is typing in ch now: in the channel itself, or with root in that thread. */
  typingIn(ch, { root = '', now = Date.now() } = {}) {
    const m = this.typing.get(ch);
    if (!m) return [];
    const out = [];
    for (const [pk, t] of m) {
      if (now - t.at > typingShownMs) m.delete(pk);
      else if (t.root === root) out.push(pk);
    }
    return out;
  }

  /** presenceOf is pk's latest presence record ({status, model, tokens, cost, …}), or null. */
  presenceOf(pk) { return this.presence.get(pk) || null; }

  /** status is what pk said of itself lately: 'online', 'away', 'paused', 'not configured', or '' (offline or not heard from). */
  status(pk, now = Date.now()) {
    const p = this.presence.get(pk);
    return p && p.status !== 'offline' && now - p.at < onlineShownMs ? p.status : '';
  }

  /** online reports whether pk said it is online lately. */
  online(pk, now = Date.now()) { return this.status(pk, now) === 'online'; }

  /** isDM reports whether ch is a direct-message channel of the person: a dm channel, or a private one of two. */
  isDM(ch) {
    const c = this.channels.get(ch);
    return Boolean(c && c.members.has(this.me) && (c.type === 'dm' || (c.private && c.members.size === 2)));
  }

  /**
   * working is the harness's live state on ev, from its reactions (👀
   * seen, 💬 working) by others than me: {who: [pubkey], busy} where
   * busy means working rather than seen. A reactor that has answered in
   * ev's thread since its reaction is no longer counted: its reply ends
   * the line at once, not when the turn's reactions are taken back.
   */
  working(ev) {
    const who = new Set();
    let busy = false;
    for (const r of this.reactionsOf(ev.id)) {
      const state = workingEmoji[r.emoji];
      if (!state) continue;
      for (const [pk, rid] of r.pubkeys) {
        if (pk === this.me || this.answered(ev, pk, this.events.get(rid)?.created_at ?? 0)) continue;
        who.add(pk);
        if (state === 'working') busy = true;
      }
    }
    return { who: [...who], busy };
  }

  /**
   * answered reports whether pk has written in ev's thread since the
   * unix time since: an agent's reply ends its working line there.
   */
  answered(ev, pk, since) {
    const ch = tag(ev, 'h');
    const root = threadOf(ev).root || ev.id;
    for (const id of this.messages.get(ch) || []) {
      const m = this.events.get(id);
      if (m.pubkey === pk && m.created_at >= since && m.id !== ev.id && (threadOf(m).root === root || m.id === root)) return true;
    }
    return false;
  }

  editList(target) {
    if (!this.editsAll.has(target)) this.editsAll.set(target, []);
    return this.editsAll.get(target);
  }

  /** gone reports whether channel id was deleted after its newest metadata. */
  gone(id) {
    const ch = this.channels.get(id);
    return Boolean(ch && ch.deletedAt >= 0 && ch.deletedAt >= ch.metaAt);
  }

  /** isAdmin reports whether pubkey runs channel ch. */
  isAdmin(ch, pubkey) {
    const role = this.channels.get(ch)?.members.get(pubkey);
    return role === 'owner' || role === 'admin';
  }

  /** deleted reports whether an event was withdrawn by its author (or, for a tombstone, a channel admin). */
  deleted(ev) {
    const ds = this.deletes.get(ev.id);
    if (!ds) return false;
    const ch = tag(ev, 'h');
    return ds.some((d) => d.pubkey === ev.pubkey || (d.kind === K.tombstone && ch && tag(d, 'h') === ch && this.isAdmin(ch, d.pubkey)));
  }

  /** content is a message's text after its author's newest edit. */
  content(ev) {
    const list = this.editsAll.get(ev.id);
    if (!list) return { text: ev.content, edited: false };
    let best = null;
    for (const e of list) {
      if (e.pubkey !== ev.pubkey || this.deleted(e)) continue;
      if (!best || e.created_at > best.created_at || (e.created_at === best.created_at && e.id > best.id)) best = e;
    }
    return best ? { text: best.content, edited: true } : { text: ev.content, edited: false };
  }

  /** reactionsOf groups live reactions on ev: [{emoji, count, mine (reaction id or ''), pubkeys}]. */
  reactionsOf(id) {
    const rs = this.reactions.get(id);
    if (!rs) return [];
    const by = new Map();
    for (const r of rs.values()) {
      if (this.deleted(r)) continue;
      const emoji = r.content || '+';
      if (!by.has(emoji)) by.set(emoji, { emoji, pubkeys: new Map(), mine: '' });
      const g = by.get(emoji);
      if (!g.pubkeys.has(r.pubkey)) g.pubkeys.set(r.pubkey, r.id);
      if (r.pubkey === this.me) g.mine = r.id;
    }
    return [...by.values()].map((g) => ({ ...g, count: g.pubkeys.size }));
  }

  /** channelMessages lists a channel's visible messages oldest first; top: only thread roots. */
  channelMessages(ch, { top = false, root = '' } = {}) {
    // A thread's messages come from its index, not a walk of the channel:
    // a pending approval is looked for under every message shown.
    const ids = root ? this.threads.get(root) : this.messages.get(ch);
    if (!ids) return [];
    const out = [];
    for (const id of ids) {
      const ev = this.events.get(id);
      if (this.deleted(ev) || (root && tag(ev, 'h') !== ch)) continue;
      const t = threadOf(ev);
      if (top && t.root) continue;
      out.push(ev);
    }
    out.sort((a, b) => a.created_at - b.created_at || this.arrival.get(a.id) - this.arrival.get(b.id));
    return out;
  }

  /** replies counts the visible replies in ev's thread. */
  replies(ch, id) {
    let n = 0;
    for (const mid of this.threads.get(id) || []) {
      const m = this.events.get(mid);
      if (tag(m, 'h') === ch && !this.deleted(m)) n++;
    }
    return n;
  }

  /** name is how a pubkey is shown: display name, name, else a short key. */
  name(pk) {
    const p = this.profiles.get(pk);
    return (p && (p.display_name || p.name)) || pk.slice(0, 8);
  }

  /** workflowOf is the name of the workflow that posted ev (the relay's key signs those), else ''. */
  workflowOf(ev) {
    if (!this.relayPubkey || ev.pubkey !== this.relayPubkey) return '';
    const t = ev.tags.find((x) => x[0] === 'workflow');
    return t ? String(t[2] || 'Workflow').slice(0, 100) : '';
  }

  /** authorName is whom ev shows as from: its workflow, else its author. */
  authorName(ev) { return this.workflowOf(ev) || this.name(ev.pubkey); }

  /** isAgent reports whether pk is an agent: an owner's attestation, a bot role in some channel, or a bot profile. */
  isAgent(pk) {
    if (this.agents.has(pk) || this.profiles.get(pk)?.bot) return true;
    for (const ch of this.channels.values()) if (ch.members.get(pk) === 'bot') return true;
    return false;
  }

  /** members lists a channel's members with names, for mentions. */
  members(ch) {
    const c = this.channels.get(ch);
    if (!c) return [];
    return [...c.members.entries()].map(([pk, role]) => ({ pk, role, name: this.name(pk) }));
  }

}
