// oracle.mjs writes the token ids that Hugging Face's own JavaScript port of
// the tokenizers library (npm @huggingface/tokenizers) produces for a set of
// tricky hand-written texts and seeded random texts. The Go tests compare
// the in-process tokenizer against its output (golden.json).
//
// Usage (from a directory where `npm install @huggingface/tokenizers` ran):
//   node oracle.mjs path/to/tokenizer.json [count] > golden.json
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "fs";

const [path, countArg] = process.argv.slice(2);
const count = Number(countArg ?? 300);
const tok = new Tokenizer(JSON.parse(fs.readFileSync(path, "utf8")), {});

const fixed = [
  "", " ", "  ", "\n", "a", "Hello world", " Hello  world ", "hello\n\nworld",
  "It's a dog's life, isn't it? I'LL say we'D've", "don't DON'T Don'T 'S 'ſ",
  "12345 1234567 3.14159 ٣٤٥ ½ ⅷ", "naïve café Ωmega Привет мир 日本語のテキスト",
  "emoji 😀👍🏽 family 👨‍👩‍👧 flags 🇫🇷", "tabs\tand\t\ttabs\t", "  leading and trailing  ",
  "line1\r\nline2\n\n\nline3 \n  indented", "x = f(a, b) + g[c]; // comment\n\treturn {x: 1};",
  "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "<|im_start|><|im_end|><|endoftext|>",
  "a<|im_start|>b <|im_end|> c", "<|im_start", "((((((((", "!!!???...", "   \n   \n", "\u00a0nbsp\u2003em space\u3000ideo",
  "mixedCASE camelCase snake_case kebab-case", "http://example.com/path?q=1&r=2#frag", "$100, €200, ¥300",
  "e\u0301 vs \u00e9", "ﬁ ligature Ａ full width", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "the the the the the then there their they", "\u0000\u0001\u001f\u007f control",
];

// rng is a small seeded generator (mulberry32) so golden.json is stable.
let seed = 12345;
function rng() {
  seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const alphabet = [
  ..."abcdefghijklmnopqrstuvwxyz", ..."ABCDEFGHIJKLMNOPQRSTUVWXYZ", ..."0123456789",
  ..."   ", "\n", "\r", "\t", ..."'.,!?;:-_()[]{}<>\"/\\@#$%^&*+=|~`",
  "é", "ü", "ß", "Ω", "я", "日", "本", "😀", "👍", "½", "٣", "\u00a0", "\u2003", "ſ",
  "<|im_start|>", "<|im_end|>", "'s", "'ll", "'RE", " the", " and", "ing", "tion",
];
const words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "token", "router", "cache", "block"];
const texts = [...fixed];
for (let i = 0; i < count; i++) {
  const n = 1 + Math.floor(rng() * 40);
  let s = "";
  for (let j = 0; j < n; j++) {
    s += rng() < 0.3 ? (rng() < 0.5 ? " " : "") + words[Math.floor(rng() * words.length)]
                     : alphabet[Math.floor(rng() * alphabet.length)];
  }
  texts.push(s);
}
const out = texts.map((text) => ({
  text,
  ids: tok.encode(text, { add_special_tokens: false }).ids,
  ids_special: tok.encode(text, { add_special_tokens: true }).ids,
}));
process.stdout.write(JSON.stringify(out, null, 0).replace(/\},\{/g, "},\n{") + "\n");
