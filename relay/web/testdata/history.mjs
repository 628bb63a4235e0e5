// Table checks of the feed's window (history.js FeedWindow) under node,
// run by TestHistoryModule: how it slides up and down a channel, stays
// within its bound, and stays put as older pages come above and live
// messages below. Input: the js directory. Output: {checked, failures}.
import { mod, eq, report } from './tables.mjs';

const { FeedWindow, windowStep, windowMax } = await mod('history.js');

// msgs(a, b) is messages a … b-1 of a channel, one a second.
const msg = (i) => ({ id: 'm' + i, created_at: 1000 + i });
const msgs = (a, b) => Array.from({ length: b - a }, (_, k) => msg(a + k));
// span names the window's first and last message and how many it shows.
const span = (w, evs) => { const s = w.slice(evs); return [s[0]?.id, s.at(-1)?.id, s.length]; };

eq('the bound is three steps', windowMax, 3 * windowStep);
let evs = msgs(0, 1000);
const w = new FeedWindow();
eq('opened: the newest step', span(w, evs), ['m850', 'm999', 150]);
eq('opened: follows the newest', w.latest, true);

// Up: the window widens to its bound, then slides.
w.older(evs);
w.older(evs);
eq('two steps up: three steps, still the newest', [span(w, evs), w.latest], [['m550', 'm999', 450], true]);
w.older(evs);
eq('three steps up: slid, the newest dropped', [span(w, evs), w.latest], [['m400', 'm849', 450], false]);

// Live messages below a window up in history do not move it.
evs = msgs(0, 1005);
eq('live messages leave a slid window where it is', span(w, evs), ['m400', 'm849', 450]);

// Up to the oldest held, then nothing more without the relay.
for (let i = 0; i < 10; i++) w.older(evs);
eq('up to the oldest held', span(w, evs), ['m0', 'm449', 450]);
eq('no further without a page from the relay', w.older(evs), false);
eq('a page asked of the relay moves the window ahead of it', w.older(evs, true), true);
eq('…its bottom already up a step', span(w, evs), ['m0', 'm299', 300]);
eq('…and no further while the page is on its way', w.older(evs), false);
evs = [...msgs(-300, 0), ...evs];
eq('the page shows a step of its messages as it comes', span(w, evs), ['m-150', 'm299', 450]);
w.older(evs);
eq('then the rest', span(w, evs), ['m-300', 'm149', 450]);

// Down: the window slides back to the newest and follows it again.
w.newer(evs);
eq('a step down', span(w, evs), ['m-150', 'm299', 450]);
let steps = 0;
while (w.newer(evs)) steps++;
eq('down to the newest, the live ones included', [span(w, evs), w.latest, steps], [['m555', 'm1004', 450], true, 5]);
evs = msgs(-300, 1006);
eq('following again: a live message shows', span(w, evs), ['m556', 'm1005', 450]);

// A deleted last message: the window ends where it was.
w.older(evs);
const last = w.slice(evs).at(-1).id;
eq('slid up', last, 'm855');
evs = evs.filter((e) => e.id !== last);
eq('its last message deleted: the window ends before its place', w.slice(evs).at(-1).id, 'm854');

// The first new message far back: the window reaches it, its bottom up.
evs = msgs(0, 2000);
const n = new FeedWindow();
n.reach(evs, 1000);
eq('reaching the first new message', [span(n, evs), n.latest], [['m1000', 'm1449', 450], false]);
n.reach(evs, 1800);
eq('a message already shown needs no move', span(n, evs), ['m1000', 'm1449', 450]);
const near = new FeedWindow();
near.reach(evs, 1800);
eq('a first new message near the newest keeps the newest', [span(near, evs), near.latest], [['m1800', 'm1999', 200], true]);

// A message brought into view from elsewhere.
n.around(evs, 200);
eq('around a message far up', span(n, evs), ['m50', 'm499', 450]);
n.around(evs, 1990);
eq('around the newest: a step above it, following again', [span(n, evs), n.latest], [['m1840', 'm1999', 160], true]);
n.reset();
eq('reset: the newest step', [span(n, evs), n.latest], [['m1850', 'm1999', 150], true]);

// An empty channel, then its first message.
const e = new FeedWindow();
eq('an empty channel shows nothing', span(e, []), [undefined, undefined, 0]);
eq('and has nothing above', e.older([]), false);
eq('its first message shows', span(e, msgs(0, 1)), ['m0', 'm0', 1]);

report();
