// Runs static/js/turns.js over a script of turn status events (stdin:
// {dir, events: [...], ask: [message id, ...]}) and prints what the
// cards would show: per message, per agent, the newest status and its
// line, plus elapsed() of a few durations.
const input = JSON.parse(await new Promise((ok) => { let s = ''; process.stdin.on('data', (d) => { s += d; }); process.stdin.on('end', () => ok(s)); }));
const { TurnBook, describe, elapsed, mayStop } = await import('file://' + input.dir + '/turns.js');
const book = new TurnBook();
const changed = input.events.map((ev) => book.add(ev));
const name = (pk) => pk.slice(0, 4);
const cards = {};
for (const id of input.ask) cards[id] = book.of(id).map((st) => ({ ...st, line: describe(st, name), waitingLine: describe(st, name, true),
  ownerMayStop: mayStop(st, st.owner, '', false), strangerMayStop: mayStop(st, 'f'.repeat(64), '', false), adminMayStop: mayStop(st, 'f'.repeat(64), '', true) }));
process.stdout.write(JSON.stringify({ changed, cards, elapsed: [0, 9400, 65000, 3720000].map(elapsed) }));
