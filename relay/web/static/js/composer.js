// The composer: a textarea that sends on Enter (Shift+Enter for a new
// line), with @mention autocomplete over the channel's members as a
// WAI-ARIA combobox (listbox popup, arrow keys, Enter or Tab to pick,
// Escape to close).

import { el } from './util.js';
import { attacher } from './files.js';

let seq = 0;
const maxOptions = 8;
// eventOverheadBytes is a signed event without its content: id, pubkey,
// sig, kind, created_at and the usual tags, serialised.
const eventOverheadBytes = 600;
const kb = (n) => `${Math.ceil(n / 1024)} KB`;

/**
 * composer builds one composer. opts: label (accessible name), members()
 * → [{pk, name, role}], send(text, mentionPubkeys) → Promise,
 * maxBytes() → the relay's event size limit (0: unknown), typing() on
 * each keystroke that leaves text in the box, stopTyping() once the text
 * is sent or the box is left; attach: {signer(), channel()} adds files
 * (button, paste, drop; files.js), and send then gets the imeta tags as a
 * third argument.
 */
export function composer({ label, members, send, placeholder = '', maxBytes = () => 0, typing = () => {}, stopTyping = () => {}, attach = null }) {
  const n = ++seq;
  const listID = `mention-list-${n}`;
  const area = el('textarea', {
    class: 'composer-input', rows: '1', 'aria-label': label, placeholder,
    role: 'combobox', 'aria-autocomplete': 'list', 'aria-expanded': 'false', 'aria-controls': listID,
  });
  const list = el('ul', { id: listID, class: 'mentions', role: 'listbox', 'aria-label': 'Channel members', hidden: true });
  const error = el('p', { class: 'composer-error', role: 'alert' });
  const button = el('button', { type: 'submit', class: 'send', text: 'Send' });
  const files = attach ? attacher(attach) : null;
  const form = el('form', { class: 'composer' }, el('div', { class: 'composer-row' }, files?.button, files?.input, area, button), files?.list, list, error);
  files?.bind(area, form);
  const picked = new Map(); // "@Name" → pubkey
  let options = [];
  let active = -1;
  let query = null; // {start, text} of the @word being typed

  const close = () => {
    list.hidden = true;
    area.setAttribute('aria-expanded', 'false');
    area.removeAttribute('aria-activedescendant');
    options = [];
    active = -1;
    query = null;
  };

  const highlight = (i) => {
    active = i;
    [...list.children].forEach((li, j) => li.setAttribute('aria-selected', j === i ? 'true' : 'false'));
    if (i >= 0) area.setAttribute('aria-activedescendant', `${listID}-${i}`);
  };

  const pick = (i) => {
    const m = options[i];
    if (!m || !query) return;
    const token = '@' + m.name;
    const v = area.value;
    const end = area.selectionStart;
    area.value = v.slice(0, query.start) + token + ' ' + v.slice(end);
    const caret = query.start + token.length + 1;
    area.setSelectionRange(caret, caret);
    picked.set(token, m.pk);
    close();
    area.focus();
  };

  const update = () => {
    const before = area.value.slice(0, area.selectionStart);
    const m = /(^|\s)@([\p{L}\p{N}_.-]*)$/u.exec(before);
    if (!m) { close(); return; }
    const q = m[2].toLowerCase();
    query = { start: before.length - m[2].length - 1, text: q };
    options = members().filter((x) => x.name.toLowerCase().includes(q))
      .sort((a, b) => Number(!a.name.toLowerCase().startsWith(q)) - Number(!b.name.toLowerCase().startsWith(q)) || a.name.localeCompare(b.name))
      .slice(0, maxOptions);
    if (options.length === 0) { close(); query = null; return; }
    list.replaceChildren(...options.map((o, i) => el('li', {
      id: `${listID}-${i}`, role: 'option', 'aria-selected': 'false',
      onmousedown: (e) => { e.preventDefault(); pick(i); },
    }, el('span', { class: 'opt-name', text: o.name }), o.role === 'bot' ? el('span', { class: 'badge', text: 'agent' }) : null)));
    list.hidden = false;
    area.setAttribute('aria-expanded', 'true');
    highlight(0);
  };

  const grow = () => {
    area.style.height = 'auto';
    area.style.height = Math.min(area.scrollHeight, 240) + 'px';
  };

  // tooLong says why text cannot be sent, before it is: the relay counts
  // the whole signed event, so the content's JSON plus the rest of it.
  const tooLong = (text) => {
    const limit = maxBytes();
    if (!limit) return '';
    const size = new TextEncoder().encode(JSON.stringify(text)).length + eventOverheadBytes;
    if (size <= limit) return '';
    return `Too long to send: this is ${kb(size)} and this relay takes at most ${kb(limit)} per message. Shorten it or split it into several messages.`;
  };

  const submit = async () => {
    const text = area.value;
    if (!text.trim() && !files?.has()) return;
    const long = tooLong(text);
    if (long) { error.textContent = long; return; }
    const pks = [];
    for (const [token, pk] of picked) if (text.includes(token) && !pks.includes(pk)) pks.push(pk);
    // An @Name typed out in full, without the list, counts when exactly one member has that name.
    const all = members();
    for (const m of text.matchAll(/(^|\s)@([\p{L}\p{N}_.-]+)/gu)) {
      const hits = all.filter((x) => x.name.toLowerCase() === m[2].toLowerCase());
      if (hits.length === 1 && !pks.includes(hits[0].pk)) pks.push(hits[0].pk);
    }
    button.disabled = true;
    error.textContent = '';
    stopTyping();
    try {
      if (files?.has()) {
        const { tags, urls } = await files.take();
        await send([text.trim(), ...urls].filter(Boolean).join('\n'), pks, tags);
        files.clear();
      } else {
        await send(text, pks);
      }
      area.value = '';
      picked.clear();
      grow();
    } catch (err) {
      error.textContent = 'Not sent: ' + (err.message || err) + '. Your text is kept; press Enter to try again.';
    } finally {
      button.disabled = false;
      area.focus();
    }
  };

  area.addEventListener('input', () => { update(); grow(); error.textContent = tooLong(area.value); if (area.value.trim()) typing(); });
  area.addEventListener('click', update);
  // The list closes a moment after the box loses focus (a click on an
  // option lands first); focus back in that moment keeps it open.
  let blurTimer = 0;
  area.addEventListener('blur', () => { stopTyping(); blurTimer = setTimeout(close, 100); });
  area.addEventListener('focus', () => clearTimeout(blurTimer));
  // Enter is handled on keydown; a line break some input methods still
  // deliver after it (a separate keypress) is dropped.
  let swallow = false;
  area.addEventListener('beforeinput', (e) => {
    if (swallow && (e.inputType === 'insertLineBreak' || (e.inputType === 'insertText' && e.data === '\n'))) e.preventDefault();
    swallow = false;
  });
  area.addEventListener('keyup', () => { swallow = false; });
  area.addEventListener('keydown', (e) => {
    if (e.isComposing) return;
    swallow = e.key === 'Enter' && !e.shiftKey;
    if (!list.hidden && options.length) {
      if (e.key === 'ArrowDown') { e.preventDefault(); highlight((active + 1) % options.length); return; }
      if (e.key === 'ArrowUp') { e.preventDefault(); highlight((active - 1 + options.length) % options.length); return; }
      if (e.key === 'Enter' || e.key === 'Tab') { e.preventDefault(); pick(active < 0 ? 0 : active); return; }
      if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); close(); return; }
    }
    if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); submit(); }
  });
  form.addEventListener('submit', (e) => { e.preventDefault(); submit(); });
  return { form, area, focus: () => area.focus() };
}
