// Logprobs through the official `openai` npm client, as an evaluation harness asks for them,
// against a running `inferlab server` (any device): top-3 logprobs of a greedy completion, the
// prompt's own logprobs (echo with max_tokens 0, lm-evaluation-harness's loglikelihood request),
// n = 3 choices, chat logprobs and a streamed completion. Prints what came back and checks its
// shape and the invariants that hold on any model (exit 1 when one does not).
//
// Usage: node validation/openai_logprobs_client.mjs --base-url http://127.0.0.1:8000/v1
//            [--model NAME] [--api-key KEY] [--node-prefix third_party/node]
//   --model: the served model's name (default: the first of /v1/models)
//   --node-prefix: where the openai package is installed (scripts/fetch-openai-client.sh puts
//   it in third_party/node; `npm install --prefix DIR openai` works too)
// Example on a tiny random checkpoint, on the CPU:
//   build/inferlab init-weights --model tiny/config.json --out /tmp/tiny --seed 1
//   build/inferlab server --model /tmp/tiny --device cpu --port 8123 &
//   node validation/openai_logprobs_client.mjs --base-url http://127.0.0.1:8123/v1
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    'base-url': { type: 'string', default: 'http://127.0.0.1:8000/v1' },
    model: { type: 'string' },
    'api-key': { type: 'string', default: 'none' },
    'node-prefix': {
      type: 'string',
      default: join(dirname(fileURLToPath(import.meta.url)), '..', 'third_party', 'node'),
    },
  },
});
const entry = join(resolve(args['node-prefix']), 'node_modules', 'openai', 'index.mjs');
if (!existsSync(entry)) {
  console.error(`no openai package at ${entry} (scripts/fetch-openai-client.sh)`);
  process.exit(2);
}
const { default: OpenAI } = await import(pathToFileURL(entry).href);
const client = new OpenAI({ apiKey: args['api-key'], baseURL: args['base-url'], maxRetries: 0 });
const model = args.model ?? (await client.models.list()).data[0].id;
const { VERSION: version } = await import(pathToFileURL(join(dirname(entry), 'version.mjs')).href);
console.log(`openai ${version} -> ${args['base-url']} (model ${model})`);

const fmt = (x) => (x === null ? 'null' : x.toFixed(4));
const show = (lp, from = 0) => {
  for (let i = from; i < lp.tokens.length; ++i) {
    const top = lp.top_logprobs[i];
    const tops = top === null ? 'null'
      : Object.entries(top).map(([t, v]) => `${JSON.stringify(t)} ${fmt(v)}`).join(', ');
    console.log(`  [${i}] ${JSON.stringify(lp.tokens[i]).padEnd(22)} offset ${String(lp.text_offset[i]).padStart(3)}`
      + `  logprob ${fmt(lp.token_logprobs[i]).padStart(9)}  top {${tops}}`);
  }
};
const maxOf = (dict) => Math.max(...Object.values(dict));
let checks = 0;
const check = (fn) => {
  fn();
  ++checks;
};

// 1. A greedy completion with the top 3 logprobs of every token.
const prompt = 'The capital of France is';
const top3 = await client.completions.create({
  model, prompt, max_tokens: 6, temperature: 0, logprobs: 3, ignore_eos: true,
});
const lp = top3.choices[0].logprobs;
console.log(`\n1. completions, logprobs 3: ${JSON.stringify(top3.choices[0].text)}`);
show(lp);
check(() => {
  assert.equal(lp.tokens.length, 6);
  for (let i = 0; i < 6; ++i) {
    const top = lp.top_logprobs[i];
    assert.equal(Object.keys(top).length, 3);
    const values = Object.values(top);
    assert.deepEqual(values, [...values].sort((a, b) => b - a), 'top logprobs sorted');
    assert.ok(values.every((v) => v <= 0));
    // Greedy: the sampled token is the most likely one.
    assert.equal(lp.token_logprobs[i], maxOf(top));
    assert.equal(top[lp.tokens[i]], lp.token_logprobs[i]);
    if (i > 0) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1]);
  }
});

// 2. The prompt scored (echo, max_tokens 0): lm-evaluation-harness's loglikelihood request.
const scored = await client.completions.create({
  model, prompt, max_tokens: 0, echo: true, logprobs: 1, temperature: 0,
});
const slp = scored.choices[0].logprobs;
console.log(`\n2. echo, max_tokens 0, logprobs 1: ${JSON.stringify(scored.choices[0].text)}, `
  + `finish_reason ${scored.choices[0].finish_reason}, usage ${JSON.stringify(scored.usage)}`);
show(slp);
const continuation = slp.token_logprobs.slice(1).reduce((a, b) => a + b, 0);
console.log(`  sum of the prompt's logprobs (tokens 1..): ${continuation.toFixed(4)}`);
check(() => {
  assert.equal(scored.choices[0].text, prompt);
  assert.equal(slp.token_logprobs[0], null);
  assert.equal(slp.top_logprobs[0], null);
  assert.equal(slp.tokens.length, scored.usage.prompt_tokens);
  assert.equal(scored.usage.completion_tokens, 0);
  assert.ok(slp.token_logprobs.slice(1).every((v) => v <= 0));
});
// The same prompt echoed before a completion: its logprobs are the same numbers.
const echoed = await client.completions.create({
  model, prompt, max_tokens: 6, echo: true, logprobs: 3, temperature: 0, ignore_eos: true,
});
check(() => {
  const e = echoed.choices[0].logprobs;
  assert.equal(echoed.choices[0].text, prompt + top3.choices[0].text);
  assert.deepEqual(e.token_logprobs.slice(0, slp.tokens.length), slp.token_logprobs);
  assert.deepEqual(e.token_logprobs.slice(slp.tokens.length), lp.token_logprobs);
});

// 3. n = 3: greedy choices are equal; sampled ones (a seed) are three draws.
for (const temperature of [0, 1]) {
  const n3 = await client.completions.create({
    model, prompt, max_tokens: 5, temperature, seed: 7, n: 3, ignore_eos: true,
  });
  console.log(`\n3. n 3, temperature ${temperature}:`);
  for (const c of n3.choices) console.log(`  choice ${c.index}: ${JSON.stringify(c.text)}`);
  check(() => {
    assert.deepEqual(n3.choices.map((c) => c.index), [0, 1, 2]);
    if (temperature === 0) assert.ok(n3.choices.every((c) => c.text === n3.choices[0].text));
    assert.equal(n3.usage.completion_tokens, 15);
  });
}

// 4. Chat: logprobs true, top_logprobs 2.
const chat = await client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, temperature: 0,
  logprobs: true, top_logprobs: 2, ignore_eos: true,
});
const content = chat.choices[0].logprobs.content;
console.log(`\n4. chat, top_logprobs 2: ${JSON.stringify(chat.choices[0].message.content)}`);
for (const e of content) {
  console.log(`  ${JSON.stringify(e.token).padEnd(22)} ${fmt(e.logprob).padStart(9)} bytes [${e.bytes}]`
    + `  top ${e.top_logprobs.map((t) => `${JSON.stringify(t.token)} ${fmt(t.logprob)}`).join(', ')}`);
}
check(() => {
  assert.equal(content.length, 4);
  for (const e of content) {
    assert.equal(e.top_logprobs.length, 2);
    assert.equal(e.top_logprobs[0].logprob, e.logprob);
    assert.ok(Array.isArray(e.bytes));
  }
});

// 5. Streamed: the chunks' logprobs add up to the whole answer's.
const stream = await client.completions.create({
  model, prompt, max_tokens: 6, temperature: 0, logprobs: 3, ignore_eos: true, stream: true,
});
const streamed = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
let chunks = 0;
for await (const chunk of stream) {
  const l = chunk.choices[0]?.logprobs;
  if (!l) continue;
  ++chunks;
  for (const key of Object.keys(streamed)) streamed[key].push(...l[key]);
}
console.log(`\n5. streamed, logprobs 3: ${chunks} chunks with logprobs, tokens ${JSON.stringify(streamed.tokens)}`);
check(() => assert.deepEqual(streamed, lp));

console.log(`\nall ${checks} checks passed`);
