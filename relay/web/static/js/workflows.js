// A channel's workflows, run by the relay: its definitions (kind 30620)
// with a Run button (a manual run, kind 46020), a form that publishes a
// definition (the relay refuses one with a mistake, naming its line and
// column, which the form shows and selects), and its runs as the relay
// records them (kind 30622, content = the run's state), each with a live
// trace: every step's status, timings, output and who answered it.
// Approve and Deny on a step that waits are shown to those the step names
// (46030/46031, d = the SHA-256 of the step's token; the relay checks the
// signer again), Cancel (46021) to the workflow's publisher and the
// channel's admins while a run goes on, Re-run (a 46020 naming the run)
// once it ended. The model (defSummary, parseRun, mayApprove, errorAt) has
// no DOM; WorkflowsPanel draws it in a dialog of its own.

import { el, fullTime, uuid4 } from './util.js';
import { tag } from './event.js';
import { sha256, utf8, hex } from './sha256.js';

/** wfK are the workflow kinds (frozen with internal/workspace). */
export const wfK = { def: 30620, run: 30622, trigger: 46020, cancel: 46021, grant: 46030, deny: 46031 };

/** maxRuns is how many of a channel's newest runs the panel asks for and lists. */
const maxRuns = 50;
/** maxOutputChars bounds a step's output as the trace shows it (an agent's reply can be long). */
const maxOutputChars = 4000;
/** goingStatuses are a run's statuses while it goes on. */
const goingStatuses = new Set(['running', 'waiting']);

/** triggerWords say a definition's trigger as a person reads it. */
const triggerWords = {
  manual: 'Run by hand', message_posted: 'On a message', reaction_added: 'On a reaction',
  schedule: 'On a schedule', webhook: 'On a webhook',
};

/** unquote takes a YAML scalar's quotes off. */
function unquote(s) {
  s = s.trim();
  if (s.length >= 2 && (s[0] === '"' || s[0] === "'") && s.at(-1) === s[0]) return s.slice(1, -1);
  return s;
}

/**
 * defSummary reads what the list shows of a definition without a YAML
 * parser (the relay checked it): {id, address, name, on, cron, publisher,
 * text}.
 */
export function defSummary(ev) {
  const text = String(ev.content || '');
  const name = /^name:[ \t]*(.+)$/m.exec(text);
  const on = /\bon:[ \t]*["']?([a-z_]+)/.exec(text);
  const cron = /\bcron:[ \t]*(.+)$/m.exec(text);
  const id = tag(ev, 'd') || '';
  return {
    id, address: `${wfK.def}:${ev.pubkey}:${id}`, name: name ? unquote(name[1]).slice(0, 200) : 'Untitled workflow',
    on: on ? on[1] : '', cron: cron ? unquote(cron[1].replace(/\s+#.*$/, '')).slice(0, 100) : '', publisher: ev.pubkey, text,
  };
}

/** triggerText says when a definition runs: "On a schedule (0 9 * * 1-5)". */
export function triggerText(d) {
  const w = triggerWords[d.on] || (d.on ? `On ${d.on}` : 'Trigger unknown');
  return d.on === 'schedule' && d.cron ? `${w} (${d.cron})` : w;
}

/**
 * parseRun reads a run record's content: the run's state, checked for the
 * fields the trace uses, or null.
 */
export function parseRun(ev) {
  let st;
  try { st = JSON.parse(ev.content); } catch { return null; }
  if (!st || typeof st !== 'object' || typeof st.run !== 'string' || !Array.isArray(st.steps)) return null;
  const str = (v) => (typeof v === 'string' ? v : '');
  const num = (v) => (Number.isFinite(v) ? v : 0);
  return {
    run: st.run, workflow: str(st.workflow), channel: str(st.channel), publisher: str(st.publisher),
    trigger: st.trigger && typeof st.trigger === 'object' ? st.trigger : {}, status: str(st.status), step: num(st.step),
    started: num(st.started), ended: num(st.ended), deadline: num(st.deadline), error: str(st.error), rerunOf: str(st.rerun_of),
    steps: st.steps.filter((s) => s && typeof s === 'object').map((s) => ({
      id: str(s.id), action: str(s.action), status: str(s.status), output: str(s.output), started: num(s.started), ended: num(s.ended),
      deadline: num(s.deadline), token: str(s.token), by: str(s.by), approvers: Array.isArray(s.approvers) ? s.approvers.filter((a) => typeof a === 'string') : [],
    })),
  };
}

/** going reports whether a run has not ended. */
export function going(run) { return goingStatuses.has(run.status); }

/**
 * mayApprove reports whether me may answer step of run: the step waits
 * and names me, the publisher (owner) or the channel's admins (admins)
 * with me among them. The relay checks it again.
 */
export function mayApprove(run, step, me, admin) {
  if (!me || run.status !== 'waiting' || step.action !== 'request_approval' || step.status !== 'running' || !step.token) return false;
  return step.approvers.some((a) => a === me || (a === 'owner' && me === run.publisher) || (a === 'admins' && admin));
}

/** mayCancel reports whether me may cancel run: its workflow's publisher or a channel admin, while it goes on. */
export function mayCancel(run, me, admin) { return Boolean(me) && going(run) && (me === run.publisher || admin); }

/**
 * errorAt reads the relay's refusal of a definition: {line, column, msg}
 * (line 0 when the text as a whole is wrong), or null for a refusal of
 * another kind.
 */
export function errorAt(reason) {
  const s = String(reason || '').replace(/^invalid:\s*/, '');
  const m = /^workflow line (\d+), column (\d+): ([\s\S]*)$/.exec(s);
  if (m) return { line: Number(m[1]), column: Number(m[2]), msg: m[3] };
  if (s.startsWith('workflow: ')) return { line: 0, column: 0, msg: s.slice('workflow: '.length) };
  return null;
}

/** offsetOf is the offset in text of a 1-based line and column, and the line's end. */
export function offsetOf(text, line, column) {
  const lines = text.split('\n');
  let at = 0;
  for (let i = 0; i < line - 1 && i < lines.length; i++) at += lines[i].length + 1;
  if (line > lines.length) return { start: text.length, end: text.length };
  const len = lines[line - 1].length;
  return { start: at + Math.min(Math.max(column - 1, 0), len), end: at + len };
}

/** took says how long from a to b (unix seconds): "4 s", "2 min 5 s", "1 h 3 min". */
export function took(a, b) {
  if (!a || !b || b < a) return '';
  const d = b - a;
  if (d < 60) return `${d} s`;
  if (d < 3600) return `${Math.floor(d / 60)} min` + (d % 60 ? ` ${d % 60} s` : '');
  return `${Math.floor(d / 3600)} h` + (Math.floor(d % 3600 / 60) ? ` ${Math.floor(d % 3600 / 60)} min` : '');
}

/** statusWords say a run's or a step's status. */
const statusWords = {
  pending: 'Pending', running: 'Running', waiting: 'Waiting for approval', succeeded: 'Succeeded', failed: 'Failed',
  denied: 'Denied', cancelled: 'Cancelled', approved: 'Approved', timed_out: 'Timed out', skipped: 'Skipped',
};

/** tokenHash is the d tag of an answer to an approval step. */
export function tokenHash(token) { return hex(sha256(utf8(token))); }

/** WorkflowsPanel is the dialog of one channel's workflows and runs. */
export class WorkflowsPanel {
  constructor(app) {
    this.app = app;
    this.dlg = null;
  }

  /** open shows channel ch's workflows; it subscribes until the dialog closes. */
  open(ch) {
    if (this.dlg) this.dlg.close();
    const app = this.app;
    this.ch = ch;
    this.defs = new Map(); // address → newest definition event
    this.runs = new Map(); // run id → {ev, st}
    this.sel = '';
    this.pending = ''; // the 46020 this page sent (its id, or rerun:<run>), until its run shows
    this.editing = null; // the definition being edited, or null for a new one
    const dlg = el('dialog', { class: 'wf-page', 'aria-labelledby': 'wf-title' });
    this.dlg = dlg;
    this.list = el('ul', { class: 'wf-list', 'aria-label': 'Workflows' });
    this.runList = el('ul', { class: 'wf-runs', 'aria-label': 'Runs' });
    this.trace = el('section', { class: 'wf-trace', 'aria-label': 'Run trace' });
    this.status = el('p', { class: 'wf-result', role: 'status' });
    this.text = el('textarea', { id: 'wf-text', rows: '9', spellcheck: 'false', 'aria-describedby': 'wf-error' });
    this.err = el('p', { id: 'wf-error', class: 'error wf-error', role: 'alert' });
    this.formTitle = el('span', { id: 'wf-form-title', text: 'New workflow' });
    const form = el('form', { class: 'stack wf-form', 'aria-labelledby': 'wf-form-title' },
      el('label', { for: 'wf-text', text: 'Definition (YAML: name, trigger, steps)' }), this.text, this.err,
      el('div', { class: 'row' }, el('button', { type: 'submit', text: 'Publish workflow' }),
        el('button', { type: 'button', text: 'New', onclick: () => this.edit(null) })));
    form.addEventListener('submit', (e) => { e.preventDefault(); this.publish(); });
    // The form folds away once the channel has workflows, so a phone shows the runs first.
    this.formBox = el('details', { class: 'wf-form-box' }, el('summary', {}, this.formTitle), form);
    const name = app.store.channels.get(ch)?.name || 'this channel';
    dlg.append(
      el('header', { class: 'wf-header' }, el('h2', { id: 'wf-title', text: `Workflows in #${name}` }),
        el('button', { type: 'button', class: 'icon', 'aria-label': 'Close workflows', text: '✕', onclick: () => dlg.close() })),
      el('div', { class: 'wf-cols' },
        el('section', { class: 'wf-col', 'aria-labelledby': 'wf-defs-title' }, el('h3', { id: 'wf-defs-title', text: 'Definitions' }), this.list, this.formBox),
        el('section', { class: 'wf-col', 'aria-labelledby': 'wf-runs-title' }, el('h3', { id: 'wf-runs-title', text: 'Runs' }), this.runList, this.trace)),
      this.status);
    // Run records are the relay's own (it refuses them from anyone else).
    const relay = app.store.relayPubkey;
    const runs = { kinds: [wfK.run], '#h': [ch], limit: maxRuns, ...(relay ? { authors: [relay] } : {}) };
    const unsub = app.conn.subscribe([{ kinds: [wfK.def], '#h': [ch] }, runs], {
      onevent: (ev) => this.add(ev),
    });
    dlg.addEventListener('close', () => { unsub(); dlg.remove(); if (this.dlg === dlg) this.dlg = null; });
    document.body.append(dlg);
    this.render();
    dlg.showModal();
    return dlg;
  }

  add(ev) {
    if (ev.kind === wfK.def) {
      const d = defSummary(ev);
      const old = this.defs.get(d.address);
      if (!old || old.created_at <= ev.created_at) this.defs.set(d.address, ev);
    } else if (ev.kind === wfK.run) {
      const relay = this.app.store.relayPubkey;
      if (relay && ev.pubkey !== relay) return;
      const st = parseRun(ev);
      if (!st) return;
      const old = this.runs.get(st.run);
      if (old && old.ev.created_at > ev.created_at) return;
      // One second holds several states of a run: a later step, or an end, wins.
      if (old && old.ev.created_at === ev.created_at && !going(old.st) && going(st)) return;
      if (old && old.ev.created_at === ev.created_at && going(st) && st.step < old.st.step) return;
      this.runs.set(st.run, { ev, st });
      // The run a Run or Re-run button started is shown once it comes: a
      // run names its trigger's event; a re-run, the run it repeats.
      const p = this.pending;
      if (p && !old && (st.trigger.event === p || (p.startsWith('rerun:') && st.rerunOf === p.slice(6)))) { this.sel = st.run; this.pending = ''; }
    } else return;
    this.soon();
  }

  /** soon re-renders once for a burst of events (a timer: a hidden tab gets no frames). */
  soon() {
    if (this.timer) return;
    this.timer = setTimeout(() => { this.timer = 0; if (this.dlg) this.render(); }, 16);
  }

  admin() { return this.app.store.isAdmin(this.ch, this.app.me) || this.app.relayAdmin === true; }

  /** act runs fn, saying in the dialog's status line what went wrong. */
  async act(fn) {
    this.status.textContent = '';
    try { await fn(); } catch (e) { this.status.textContent = String(e.message || e); }
  }

  runsNewest() {
    return [...this.runs.values()].map((r) => r.st).sort((a, b) => b.started - a.started || b.run.localeCompare(a.run));
  }

  render() {
    const s = this.app.store;
    const defs = [...this.defs.values()].map(defSummary).sort((a, b) => a.name.localeCompare(b.name));
    const runs = this.runsNewest();
    const names = new Map(defs.map((d) => [d.address, d.name]));
    this.list.replaceChildren(...defs.map((d) => {
      const n = runs.filter((r) => r.workflow === d.address).length;
      return el('li', { class: 'wf-def', 'data-workflow': d.id },
        el('div', { class: 'wf-def-head' }, el('strong', { text: d.name }),
          el('span', { class: 'wf-meta', text: `${triggerText(d)} · by ${s.name(d.publisher)} · ${n} run${n === 1 ? '' : 's'}` })),
        el('div', { class: 'row' },
          el('button', { type: 'button', class: 'primary small', text: 'Run', 'aria-label': `Run ${d.name}`, onclick: () => this.act(() => this.run(d)) }),
          d.publisher === this.app.me ? el('button', { type: 'button', class: 'small', text: 'Edit', 'aria-label': `Edit ${d.name}`, onclick: () => this.edit(d) }) : null));
    }));
    if (!defs.length) {
      this.list.append(el('li', { class: 'hint', text: 'No workflows in this channel yet: publish one below.' }));
      this.formBox.open = true;
    }
    this.runList.replaceChildren(...runs.slice(0, maxRuns).map((r) => el('li', {},
      el('button', { type: 'button', class: 'wf-run', 'data-run': r.run, 'data-status': r.status, 'aria-pressed': String(r.run === this.sel), onclick: () => { this.sel = r.run; this.render(); } },
        el('span', { class: 'wf-run-name', text: names.get(r.workflow) || 'Workflow' }),
        el('span', { class: 'wf-status', 'data-status': r.status, text: statusWords[r.status] || r.status }),
        el('time', { datetime: new Date(r.started * 1000).toISOString(), text: fullTime(r.started) })))));
    if (!runs.length) this.runList.append(el('li', { class: 'hint', text: 'No runs yet.' }));
    const sel = this.runs.get(this.sel)?.st;
    this.trace.replaceChildren(...(sel ? this.traceOf(sel, names.get(sel.workflow) || 'Workflow') : [el('p', { class: 'hint', text: runs.length ? 'Pick a run to see its steps.' : '' })]));
  }

  /** traceOf draws one run: its head, its actions and each step. */
  traceOf(r, name) {
    const s = this.app.store, me = this.app.me, admin = this.admin();
    const head = el('div', { class: 'wf-trace-head' },
      el('h3', { text: `${name}: ${statusWords[r.status] || r.status}` }),
      el('p', { class: 'wf-meta', text: `Started ${fullTime(r.started)}` + (r.ended ? ` · took ${took(r.started, r.ended) || '0 s'}` : '') +
        (r.trigger.author ? ` · started by ${s.name(r.trigger.author)}` : '') + (r.rerunOf ? ` · re-run of ${r.rerunOf.slice(0, 8)}` : '') }),
      r.error ? el('p', { class: 'error', text: r.error }) : null);
    const actions = el('div', { class: 'row' },
      mayCancel(r, me, admin) ? el('button', { type: 'button', class: 'small', text: 'Cancel run', onclick: () => this.act(() => this.cancel(r)) }) : null,
      !going(r) ? el('button', { type: 'button', class: 'small', text: 'Re-run', onclick: () => this.act(() => this.rerun(r)) }) : null);
    const steps = el('ol', { class: 'wf-steps', 'aria-label': 'Steps' }, ...r.steps.map((st) => {
      const when = st.started ? fullTime(st.started) + (st.ended ? ` · ${took(st.started, st.ended) || '0 s'}` : '') : '';
      const clip = (t) => (t.length > maxOutputChars ? t.slice(0, maxOutputChars) + '…' : t);
      const out = clip(st.output);
      // A posted message's output is its event id: the message is shown
      // instead, once the page has it.
      const posted = st.action === 'send_message' && /^[0-9a-f]{64}$/.test(st.output) ? s.events.get(st.output) || { id: st.output } : null;
      const ok = mayApprove(r, st, me, admin);
      return el('li', { class: 'wf-step', 'data-step': st.id, 'data-status': st.status },
        el('div', { class: 'wf-step-head' }, el('strong', { text: st.id }), el('span', { class: 'wf-meta', text: st.action }),
          el('span', { class: 'wf-status', 'data-status': st.status, text: st.status === 'running' && st.action === 'request_approval' ? statusWords.waiting : statusWords[st.status] || st.status })),
        when ? el('p', { class: 'wf-meta', text: when }) : null,
        st.by ? el('p', { class: 'wf-by', text: `${st.status === 'approved' ? 'Approved' : st.status === 'denied' ? 'Denied' : 'Answered'} by ${s.name(st.by)}` }) : null,
        posted ? el('p', { class: 'wf-output wf-posted', text: posted.content !== undefined ? 'Posted: ' + clip(posted.content) : `Posted a message (${posted.id.slice(0, 8)})` }) :
          out && !st.by ? el('pre', { class: 'wf-output', text: out }) : null,
        st.status === 'running' && st.action === 'request_approval' && !ok ? el('p', { class: 'hint', text: 'Waiting for ' + approverWords(st.approvers, s) + '.' }) : null,
        ok ? el('div', { class: 'row' },
          el('button', { type: 'button', class: 'primary small', text: 'Approve', onclick: () => this.act(() => this.answer(st, true)) }),
          el('button', { type: 'button', class: 'small', text: 'Deny', onclick: () => this.act(() => this.answer(st, false)) })) : null);
    }));
    return [head, actions, steps];
  }

  async run(d) {
    // Each press is a run of its own: two presses within a second would
    // otherwise be one event (the same kind, tags, content and second).
    const ev = await this.app.send({ kind: wfK.trigger, tags: [['d', d.id], ['buzz-press', uuid4()]], content: '' });
    // The run's first state may have come before the relay's OK did.
    const came = [...this.runs.values()].find((r) => r.st.trigger.event === ev.id);
    if (came) { this.sel = came.st.run; this.render(); } else this.pending = ev.id;
    this.status.textContent = `Started ${d.name}.`;
  }

  async rerun(r) {
    const d = defSummary(this.defs.get(r.workflow) || { content: '', tags: [] });
    if (!d.id) throw new Error('This run\'s workflow is gone, so it cannot run again.');
    this.pending = 'rerun:' + r.run;
    await this.app.send({ kind: wfK.trigger, tags: [['d', d.id], ['run', r.run]], content: '' });
    this.status.textContent = `Running ${d.name} again.`;
  }

  async cancel(r) {
    await this.app.send({ kind: wfK.cancel, tags: [['d', r.run]], content: '' });
    this.status.textContent = 'Cancel sent.';
  }

  async answer(st, approve) {
    await this.app.send({ kind: approve ? wfK.grant : wfK.deny, tags: [['d', tokenHash(st.token)]], content: '' });
    this.status.textContent = approve ? `Approved ${st.id}.` : `Denied ${st.id}.`;
  }

  /** edit fills the form with d's text (null: an empty form for a new workflow). */
  edit(d) {
    this.editing = d;
    this.formTitle.textContent = d ? `Edit ${d.name}` : 'New workflow';
    this.text.value = d ? d.text : '';
    this.formBox.open = true;
    this.err.textContent = '';
    this.text.removeAttribute('aria-invalid');
    this.text.focus();
  }

  /** publish sends the form's definition; a refusal names its line and column, and that spot is selected. */
  async publish() {
    const text = this.text.value;
    this.err.textContent = '';
    this.text.removeAttribute('aria-invalid');
    const id = this.editing?.id || uuid4();
    try {
      await this.app.send({ kind: wfK.def, tags: [['d', id], ['h', this.ch]], content: text });
    } catch (e) {
      const at = errorAt(e.reason) || { line: 0, column: 0, msg: String(e.message || e) };
      this.text.setAttribute('aria-invalid', 'true');
      this.err.replaceChildren(at.line ? el('strong', { text: `Line ${at.line}, column ${at.column}: ` }) : '', at.msg);
      this.err.dataset.line = String(at.line);
      this.err.dataset.column = String(at.column);
      if (at.line) {
        const { start, end } = offsetOf(text, at.line, at.column);
        this.text.focus();
        this.text.setSelectionRange(start, Math.max(end, start));
      }
      return;
    }
    this.status.textContent = this.editing ? 'Workflow updated.' : 'Workflow published.';
    this.edit(null);
    this.formBox.open = false;
  }
}

/** approverWords says who may answer a step: "the workflow's owner or a channel admin". */
function approverWords(approvers, store) {
  const w = approvers.map((a) => (a === 'owner' ? 'the workflow\'s owner' : a === 'admins' ? 'a channel admin' : store.name(a)));
  return w.length ? w.join(' or ') : 'an answer';
}
