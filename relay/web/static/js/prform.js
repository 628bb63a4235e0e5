// The form that opens a pull request on a repository the relay hosts,
// from the repository view: the web client's `buzz pr create`. It
// publishes the same NIP-34 pull request (kind 1618: the repository's a,
// p, r and h, subject, c = the head's tip, branch-name, buzz-base, clone,
// t labels) signed by the person, and for a draft the 1633 status after
// it. The head and base are branches the relay's git has (buzz-refs); the
// head's commits the base lacks are read from buzz-log?ref=…&base=…, so a
// head with none is refused in words before anything is signed.

import { el } from './util.js';
import { body } from './render.js';
import { tag } from './event.js';
import { prK, openPR, repoFetch, statusTpl } from './repo.js';

/** maxLabels bounds the labels a pull request gets from the form. */
const maxLabels = 20;

/** prTemplate is the unsigned 1618 for repo (with ann, the relay's 30617) as buzz pr create makes it. */
export function prTemplate(repo, { head, base, tip, title, description, labels = [] }) {
  const ann = repo.ann;
  const tags = [['a', `30617:${ann.pubkey}:${repo.owner}/${repo.name}`], ['p', repo.owner]];
  const r = ann.tags.find((t) => t[0] === 'r');
  if (r) tags.push(r);
  const h = tag(ann, 'h');
  if (h) tags.push(['h', h]);
  tags.push(['subject', title], ['c', tip], ['branch-name', head], ['buzz-base', base]);
  const clone = ann.tags.find((t) => t[0] === 'clone');
  if (clone) tags.push(clone);
  for (const l of labels) tags.push(['t', l]);
  return { kind: prK.pr, content: description, tags };
}

/** splitLabels reads "bug, ui" as ['bug', 'ui']: no empties, no repeats. */
export function splitLabels(text) {
  return [...new Set(text.split(',').map((s) => s.trim()).filter(Boolean))];
}

/**
 * openPRForm shows the form for repo ({owner, name, ann}) as a modal
 * dialog; branches are the relay's [{name, commit}], head and base the
 * ones picked first. On success the form closes, done() runs and the new
 * pull request's page opens.
 */
export function openPRForm(repo, app, { branches, head, base, done = () => {} }) {
  document.getElementById('pr-new')?.remove();
  const dlg = el('dialog', { class: 'pr-page pr-new', id: 'pr-new', 'aria-labelledby': 'pr-new-title' });
  const names = branches.map((b) => b.name);
  const branchSel = (id, picked) => el('select', { id, name: id }, names.map((n) => el('option', { value: n, text: n, selected: n === picked })));
  const headSel = branchSel('pr-new-head', head), baseSel = branchSel('pr-new-base', base);
  const title = el('input', { id: 'pr-new-subject', type: 'text', required: true, autocomplete: 'off' });
  const desc = el('textarea', { id: 'pr-new-body', rows: '8' });
  const labels = el('input', { id: 'pr-new-labels', type: 'text', autocomplete: 'off' });
  const draft = el('input', { id: 'pr-new-draft', type: 'checkbox' });
  const preview = el('div', { class: 'pr-description msg-body', 'aria-label': 'Description preview', role: 'region', hidden: true });
  const status = el('p', { class: 'pr-result', role: 'status', id: 'pr-new-status' });
  const submit = el('button', { type: 'submit', text: 'Open pull request' });
  const field = (label, input) => el('div', { class: 'pr-field' }, el('label', { for: input.id, text: label }), input);
  const showPreview = el('button', { type: 'button', class: 'link', text: 'Preview', 'aria-expanded': 'false', onclick: () => {
    preview.hidden = !preview.hidden;
    showPreview.setAttribute('aria-expanded', String(!preview.hidden));
    if (!preview.hidden) preview.replaceChildren(desc.value.trim() ? body(desc.value, { name: (pk) => app.store.name(pk), mentioned: [] }) : el('p', { class: 'hint', text: 'Nothing to preview.' }));
  } });
  // check says what is wrong with the choice, or '' when nothing is.
  const check = () => {
    if (!names.length) return 'The repository has no branches yet: push one first.';
    if (headSel.value === baseSel.value) return `The head and the base are the same branch (${headSel.value}): pick the branch with your changes as the head.`;
    if (!title.value.trim()) return 'Write a title.';
    return '';
  };
  const form = el('form', { class: 'pr-new-form', novalidate: true },
    el('div', { class: 'pr-branches' }, field('Head (the branch with the changes)', headSel), el('span', { 'aria-hidden': 'true', class: 'pr-arrow', text: '→' }), field('Base (the branch to merge into)', baseSel)),
    field('Title', title),
    field('Description (markdown)', desc), showPreview, preview,
    field('Labels (optional, separated by commas)', labels),
    el('p', { class: 'pr-check' }, draft, ' ', el('label', { for: 'pr-new-draft', text: 'Draft: not ready for review yet' })),
    el('div', { class: 'pr-actions' }, submit, el('button', { type: 'button', text: 'Cancel', onclick: () => dlg.close() })),
    status);
  // A word about an earlier choice goes when the choice changes.
  form.addEventListener('change', () => { status.textContent = ''; });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const bad = check();
    if (bad) { status.textContent = bad; return; }
    const h = headSel.value, b = baseSel.value, ls = splitLabels(labels.value);
    if (ls.length > maxLabels) { status.textContent = `That is ${ls.length} labels; a pull request takes at most ${maxLabels}.`; return; }
    submit.disabled = true;
    status.textContent = `Reading the commits of ${h} that ${b} lacks…`;
    try {
      const log = JSON.parse(await repoFetch(app, repo, 'GET', `buzz-log?${new URLSearchParams({ ref: h, base: b })}`));
      if (!log.commits.length) throw new Error(`${b} already has every commit of ${h}: there is nothing to merge. Push your commits to ${h} first.`);
      status.textContent = 'Signing and sending…';
      const ev = await app.send(prTemplate(repo, { head: h, base: b, tip: log.commit, title: title.value.trim(), description: desc.value, labels: ls }));
      if (draft.checked) app.prs.add(await app.send(statusTpl(ev, prK.draft, '')));
      dlg.close();
      done(ev);
      openPR(ev, app);
    } catch (x) {
      status.textContent = String(x.message || x);
      submit.disabled = false;
    }
  });
  dlg.append(
    el('header', { class: 'pr-header' }, el('h2', { id: 'pr-new-title', text: `New pull request on ${repo.name}` }),
      el('button', { type: 'button', class: 'icon', 'aria-label': 'Close the new pull request form', text: '✕', onclick: () => dlg.close() })),
    form);
  dlg.addEventListener('close', () => dlg.remove());
  document.body.append(dlg);
  dlg.showModal();
  title.focus();
  return dlg;
}
