// Keyboard shortcuts: Ctrl/Cmd+K a switcher over channels and people,
// Alt+↑/↓ the previous or next channel, ↑ in an empty composer edits
// one's last message, Ctrl+/ lists these.

import { el } from './util.js';

const $ = (id) => document.getElementById(id);
const maxResults = 12;

/** wireKeys installs the shortcuts. app: {store, me}. */
export function wireKeys(app) {
  const sw = $('switcher'), input = $('switcher-input'), list = $('switcher-list');
  let results = [], active = 0;

  const choices = (q) => {
    const s = app.store;
    q = q.trim().toLowerCase();
    const out = [];
    for (const a of document.querySelectorAll('#channel-list a.chan')) {
      const name = a.querySelector('.chan-name')?.textContent || '';
      if (!q || name.toLowerCase().includes(q)) out.push({ label: (a.querySelector('.sigil')?.textContent || '#') + ' ' + name, kind: 'channel', href: a.getAttribute('href') });
    }
    for (const [pk] of s.profiles) {
      if (pk === app.me) continue;
      const name = s.name(pk);
      if (q && !name.toLowerCase().includes(q)) continue;
      // A person is reached in a channel both are in.
      const shared = [...s.channels.values()].find((c) => c.name && c.members.has(pk) && c.members.has(app.me));
      if (shared) out.push({ label: `${name} (in #${shared.name})`, kind: 'person', href: '#/c/' + shared.id });
    }
    return out.slice(0, maxResults);
  };
  const show = () => {
    results = choices(input.value);
    active = Math.min(active, Math.max(results.length - 1, 0));
    list.replaceChildren(...results.map((r, i) => el('li', {
      id: 'switcher-' + i, role: 'option', 'aria-selected': i === active ? 'true' : 'false', class: r.kind,
      onmousedown: (e) => { e.preventDefault(); go(i); },
    }, r.label)));
    if (!results.length) list.append(el('li', { class: 'empty', role: 'option', 'aria-disabled': 'true', text: 'Nothing matches' }));
    input.setAttribute('aria-activedescendant', results.length ? 'switcher-' + active : '');
  };
  const go = (i) => {
    const r = results[i];
    if (!r) return;
    sw.close();
    // Closing gives focus back to whatever had it (a button, say), where
    // the Enter that picked would press it: focus the message box instead.
    document.activeElement?.blur();
    location.hash = r.href;
    setTimeout(() => document.querySelector('#composer-slot textarea')?.focus(), 0);
  };
  input.addEventListener('input', () => { active = 0; show(); });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowDown') { e.preventDefault(); active = (active + 1) % Math.max(results.length, 1); show(); }
    if (e.key === 'ArrowUp') { e.preventDefault(); active = (active - 1 + results.length) % Math.max(results.length, 1); show(); }
    if (e.key === 'Enter') { e.preventDefault(); go(active); }
  });
  $('shortcuts-close').addEventListener('click', () => $('shortcuts').close());

  const step = (d) => {
    const links = [...document.querySelectorAll('#channel-list a.chan')];
    if (!links.length) return;
    const at = links.findIndex((a) => a.getAttribute('aria-current') === 'page');
    const next = links[(at + d + links.length) % links.length];
    location.hash = next.getAttribute('href');
  };

  document.addEventListener('keydown', (e) => {
    const mod = e.ctrlKey || e.metaKey;
    if (mod && !e.altKey && (e.key === 'k' || e.key === 'K')) {
      e.preventDefault();
      if (document.querySelector('dialog[open]:not(#switcher)')) return;
      input.value = '';
      active = 0;
      show();
      sw.showModal();
      input.focus();
      return;
    }
    if (mod && e.key === '/') {
      e.preventDefault();
      if (!document.querySelector('dialog[open]')) $('shortcuts').showModal();
      return;
    }
    if (e.altKey && !mod && (e.key === 'ArrowUp' || e.key === 'ArrowDown')) {
      if (document.querySelector('dialog[open]')) return;
      e.preventDefault();
      step(e.key === 'ArrowUp' ? -1 : 1);
      return;
    }
    const t = e.target;
    if (e.key === 'ArrowUp' && !mod && !e.altKey && !e.shiftKey && t instanceof HTMLTextAreaElement &&
        t.classList.contains('composer-input') && t.value === '' && t.getAttribute('aria-expanded') !== 'true') {
      const feed = t.closest('#thread') ? $('thread-feed') : $('feed');
      const mine = feed.querySelectorAll('article.mine button[aria-label="Edit message"]');
      if (mine.length) { e.preventDefault(); mine[mine.length - 1].click(); }
    }
  });
}
