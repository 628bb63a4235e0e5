// The composer (composer.js) in a real document with real keys, run by
// TestComposerView: Enter sends and Shift+Enter makes a new line, a paste
// over the relay's event size limit is refused naming the limit, a failed
// send keeps the text, and @mentions complete from the keyboard.
import { eq, press, type, frame, hex, text, until } from './frame.mjs';
import { composer } from '/static/js/composer.js';

const ann = hex('ann'), annie = hex('annie'), bob = hex('bob'), bot = hex('helper');
const sent = [];
let typing = 0, stopped = 0, limit = 0, failWith = '';
const c = composer({
  label: 'Message #general',
  placeholder: 'Message #general',
  members: () => [{ pk: ann, name: 'Ann', role: 'member' }, { pk: annie, name: 'Annie', role: 'member' }, { pk: bob, name: 'Bob', role: 'admin' }, { pk: bot, name: 'helper', role: 'bot' }],
  send: async (t, pks) => { if (failWith) throw new Error(failWith); sent.push([t, pks]); },
  maxBytes: () => limit,
  typing: () => { typing++; },
  stopTyping: () => { stopped++; },
});
document.body.append(c.form);
const area = c.area;
const error = () => text(c.form.querySelector('.composer-error'));
const list = c.form.querySelector('[role=listbox]');
const sends = async () => { await until('the send to settle', () => !c.form.querySelector('button.send').disabled); await frame(); };
c.focus();
eq('the box has the focus and its name', [document.activeElement === area, area.getAttribute('aria-label')], [true, 'Message #general']);

// Enter sends; the box empties, with no stray line break.
await type('hello');
eq('typing is announced', typing > 0, true);
await press('Enter');
await sends();
eq('Enter sends', sent.pop(), ['hello', []]);
eq('…and empties the box', [area.value, stopped > 0], ['', true]);

// Shift+Enter is a new line; Enter then sends both lines.
await type('line one');
await press({ key: 'Enter', shift: true });
await type('line two');
eq('Shift+Enter: a new line, nothing sent', [area.value, sent.length], ['line one\nline two', 0]);
await press('Enter');
await sends();
eq('Enter sends the lines', sent.pop(), ['line one\nline two', []]);

// Nothing but spaces is not sent.
await type('   ');
await press('Enter');
await sends();
eq('blank: not sent', sent.length, 0);
area.select();
await press('Backspace');

// A paste over the relay's event size limit is refused before sending,
// the limit named; it counts bytes, not characters.
limit = 16 * 1024;
await type('x'.repeat(20000));
eq('too long: refused at once, naming the limit', error(), 'Too long to send: this is 21 KB and this relay takes at most 16 KB per message. Shorten it or split it into several messages.');
await press('Enter');
await sends();
eq('too long: Enter sends nothing and keeps the text', [sent.length, area.value.length, error().startsWith('Too long to send')], [0, 20000, true]);
area.select();
await type('é'.repeat(8000));
eq('8000 two-byte characters are over 16 KB', error().startsWith('Too long to send: this is 17 KB'), true);
area.select();
await type('é'.repeat(7000));
eq('7000 are not', error(), '');
await press('Enter');
await sends();
eq('…and are sent', sent.pop()?.[0].length, 7000);
limit = 0;
await type('y'.repeat(20000));
eq('no limit known: nothing refused', error(), '');
area.select();
await press('Backspace');

// A failed send keeps the text and says what to do.
failWith = 'the relay did not answer within 15 s; check the connection and try again';
await type('important words');
await press('Enter');
await sends();
eq('failed: says why, keeps the text', [error(), area.value], ['Not sent: the relay did not answer within 15 s; check the connection and try again. Your text is kept; press Enter to try again.', 'important words']);
failWith = '';
await press('Enter');
await sends();
eq('Enter again sends it', [sent.pop(), error(), area.value], [['important words', []], '', '']);

// @mentions: the list offers members as one types, best first; arrows
// move, Enter picks (and does not send), the pick is mentioned.
await type('hi @an');
eq('the list opens', [list.hidden, area.getAttribute('aria-expanded'), [...list.querySelectorAll('[role=option]')].map(text)], [false, 'true', ['Ann', 'Annie']]);
eq('the first is active', area.getAttribute('aria-activedescendant'), list.children[0].id);
await press('ArrowDown');
eq('ArrowDown moves to the next', [area.getAttribute('aria-activedescendant'), list.children[1].getAttribute('aria-selected')], [list.children[1].id, 'true']);
await press('Enter');
eq('Enter picks it, sends nothing', [area.value, list.hidden, sent.length], ['hi @Annie ', true, 0]);
await type('look');
await press('Enter');
await sends();
eq('the pick is mentioned', sent.pop(), ['hi @Annie look', [annie]]);
await type('@hel');
eq('an agent is marked in the list', text(list.querySelector('[role=option] .badge')), 'agent');
await press('Escape');
eq('Escape closes the list, keeps the text', [list.hidden, area.value], [true, '@hel']);
area.select();
await press('Backspace');
await type('@Bob thanks');
await press('Enter');
await sends();
eq('a name typed out in full is mentioned', sent.pop(), ['@Bob thanks', [bob]]);
