// Runs the pure parts of static/js/files.js (stdin: {dir, events: [...],
// text, descriptor, sizes: [...]}) and prints what they give: each
// event's attachments, the text without the first event's file URLs, the
// imeta tag of a descriptor read back, and size() of a few byte counts.
const input = JSON.parse(await new Promise((ok) => { let s = ''; process.stdin.on('data', (d) => { s += d; }); process.stdin.on('end', () => ok(s)); }));
const { attachments, withoutURLs, imetaTag, size } = await import('file://' + input.dir + '/files.js');
const files = input.events.map((ev) => attachments(ev));
process.stdout.write(JSON.stringify({
  files,
  text: withoutURLs(input.text, files[0]),
  roundTrip: attachments({ tags: [imetaTag(input.descriptor, 'shot.png')] }),
  sizes: input.sizes.map(size),
}));
