// Computes what JavaScript itself says about a fixed set of tricky strings, so the Python tests can
// compare js_json_stringify, the dsh-session: URI, UTF-8 byte counts and lower-casing against it.
// Run `make vectors` (node tests/js/make_vectors.mjs > tests/js/vectors.json) to regenerate.
const fixed = [
  '', 'source', 'source-session', 'a"b\\c', '\b\f\n\r\t', '\u0000\u0001\u001f\u007f',
  '\u2028\u2029', '\u00a0\ufeff', '界', '😀', '👩‍💻', 'é', 'e\u0301', '</referenced-sessions>',
  '<script>', '\ud800', '\udfff', 'a\ud800b', '\udc00\ud800', '\ud83d\ude00\ud83d', 'İSTANBUL',
  'ΣΑΣ', 'ǅ', 'ß', 'K', '/home/user/proj', 'C:\\Users\\me', 'id with spaces', '~', '.', '..',
  '\u{10ffff}', '\uffff', 'a]b\\', '@[x](dsh-session:IiI)',
];
// A deterministic pseudo-random tail: strings of random UTF-16 units drawn from tricky ranges.
let state = 0x2545f491;
const next = () => { state ^= state << 13; state ^= state >>> 17; state ^= state << 5; return (state >>> 0); };
const pools = [[0x00, 0x20], [0x20, 0x7f], [0x7f, 0xa1], [0x2026, 0x2030], [0x3040, 0x30ff],
               [0xd800, 0xdc00], [0xdc00, 0xe000], [0xfff0, 0x10000], [0x3c, 0x3d]];
for (let i = 0; i < 300; i++) {
  const length = next() % 12;
  const units = [];
  for (let j = 0; j < length; j++) {
    const [lo, hi] = pools[next() % pools.length];
    units.push(lo + (next() % (hi - lo)));
  }
  fixed.push(String.fromCharCode(...units));
}
const vectors = fixed.map((text) => {
  const json = JSON.stringify(text);
  return {
    units: Array.from({ length: text.length }, (_, i) => text.charCodeAt(i)),
    json,
    base64url: Buffer.from(json, 'utf8').toString('base64url'),
    byteLength: Buffer.byteLength(text, 'utf8'),
    jsonByteLength: Buffer.byteLength(json, 'utf8'),
    lower: text.toLowerCase(),
  };
});
process.stdout.write(JSON.stringify({ node: process.version, vectors }, null, 1) + '\n');
