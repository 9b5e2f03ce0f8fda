// The official `openai` npm client (Node) against `inferlab server --device cpu --api-key K` on a
// tiny checkpoint: with the right key a completion, a chat completion (whole and streamed) and
// the model list work; with a wrong key the client raises AuthenticationError (401). Then
// validation/openai_logprobs_client.mjs against the same server: logprobs as an evaluation
// harness asks for them (top 3 of a completion, the prompt echoed with max_tokens 0, n = 3, chat
// logprobs and a stream), with the invariants that hold on any model.
// Usage: node openai_node_client_test.mjs INFERLAB_BINARY NODE_PREFIX
//   NODE_PREFIX: where scripts/fetch-openai-client.sh installed the package (third_party/node).
// Exit 0: passed; 1: failed; 77 (CTest's SKIP_RETURN_CODE): the package or the Llama 3 tokenizer
// is not there.
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const [inferlab, prefix] = process.argv.slice(2);
const KEY = 'sk-inferlab-node-test';
const skip = (why) => {
  console.log(`skipped: ${why}`);
  process.exit(77);
};

const entry = join(prefix ?? '', 'node_modules', 'openai', 'index.mjs');
if (!inferlab || !existsSync(entry)) skip(`no openai package at ${entry} (scripts/fetch-openai-client.sh)`);
const { default: OpenAI, AuthenticationError } = await import(pathToFileURL(entry).href);

// A tiny checkpoint: two layers, hidden 32, the Llama 3 vocabulary and tokenizer.
const dir = mkdtempSync(join(tmpdir(), 'inferlab-node-client-'));
writeFileSync(join(dir, 'config.json'), JSON.stringify({
  architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 32,
  intermediate_size: 64, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2,
  head_dim: 8, vocab_size: 128256, max_position_embeddings: 512, rms_norm_eps: 1e-5,
  rope_theta: 10000.0,
}));
try {
  execFileSync(inferlab, ['init-weights', '--model', join(dir, 'config.json'), '--out',
    join(dir, 'ckpt'), '--seed', '1'], { stdio: ['ignore', 'ignore', 'pipe'] });
} catch (e) {
  const err = String(e.stderr ?? '');
  rmSync(dir, { recursive: true, force: true });
  if (err.includes('no fetched llama3 tokenizer')) skip('Llama 3 tokenizer not fetched');
  throw e;
}

const server = spawn(inferlab, ['server', '--model', join(dir, 'ckpt'), '--device', 'cpu',
  '--port', '0', '--api-key', KEY], { stdio: ['ignore', 'ignore', 'pipe'] });
let log = '';
const exited = new Promise((resolve) => server.on('exit', (code, signal) => resolve({ code, signal })));
const started = new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`no "serving" line in 60 s:\n${log}`)), 60000);
  server.stderr.on('data', (data) => {
    log += data;
    const m = log.match(/serving .* on http:\/\/[^ ]+:(\d+)/);
    if (m) {
      clearTimeout(timer);
      resolve(Number(m[1]));
    }
  });
  server.on('exit', () => reject(new Error(`the server exited:\n${log}`)));
});
let port;
try {
  port = await started;
} catch (e) {
  console.error(e.message);
  server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  process.exit(1);
}

let failed = false;
try {
  const baseURL = `http://127.0.0.1:${port}/v1`;
  const client = new OpenAI({ apiKey: KEY, baseURL, maxRetries: 0, timeout: 60000 });

  const models = await client.models.list();
  assert.equal(models.data[0].id, 'ckpt');

  // Extra fields (ignore_eos) go through to the server as they are.
  const completion = await client.completions.create({
    model: 'ckpt', prompt: 'Hello', max_tokens: 5, temperature: 0, ignore_eos: true,
  });
  assert.equal(completion.object, 'text_completion');
  assert.equal(typeof completion.choices[0].text, 'string');
  assert.equal(completion.choices[0].finish_reason, 'length');
  assert.equal(completion.usage.completion_tokens, 5);

  const chat = await client.chat.completions.create({
    model: 'ckpt', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, temperature: 0,
    ignore_eos: true,
  });
  assert.equal(chat.object, 'chat.completion');
  assert.equal(chat.choices[0].message.role, 'assistant');
  assert.equal(typeof chat.choices[0].message.content, 'string');
  assert.equal(chat.usage.completion_tokens, 4);

  // Streamed: the client's own SSE parser reads the chunks to the end.
  const stream = await client.chat.completions.create({
    model: 'ckpt', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, temperature: 0,
    ignore_eos: true, stream: true,
  });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, 'length');
  assert.equal(text, chat.choices[0].message.content);

  // A wrong key: the client's AuthenticationError, status 401, OpenAI's code.
  const wrong = new OpenAI({ apiKey: 'sk-wrong', baseURL, maxRetries: 0, timeout: 60000 });
  await assert.rejects(
    wrong.completions.create({ model: 'ckpt', prompt: 'Hello', max_tokens: 2 }),
    (e) => e instanceof AuthenticationError && e.status === 401 && e.code === 'invalid_api_key',
  );
  console.log('openai client: models, completion, chat, streamed chat and a wrong key: passed');

  // Asynchronously: the server's stderr keeps being read meanwhile.
  const script = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'validation',
    'openai_logprobs_client.mjs');
  const { stdout } = await promisify(execFile)(process.execPath, [script, '--base-url', baseURL,
    '--model', 'ckpt', '--api-key', KEY, '--node-prefix', prefix], { timeout: 120000 });
  console.log(stdout.trimEnd().split('\n').slice(-1)[0]);
} catch (e) {
  failed = true;
  console.error(e);
  console.error(`server log:\n${log}`);
} finally {
  server.kill('SIGTERM');
  const { code, signal } = await exited;
  if (code !== 0) {
    failed = true;
    console.error(`the server ended with code ${code}, signal ${signal}:\n${log}`);
  }
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
