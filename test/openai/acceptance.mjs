// Acceptance checks of forged's HTTP API with the official openai package,
// run by daemon/httpapi's TestOpenAIPackage (which starts the daemon and
// sets the environment). Each check throws on a mismatch; the script prints
// "PASS <name>" per check and exits non-zero on the first failure.
//
//   FORGED_HTTP_SOCKET  the HTTP API's Unix socket
//   FORGED_HTTP_URL     http://127.0.0.1:PORT (loopback TCP)
//   FORGED_TOKEN        a valid token for the TCP listener
//   FORGED_REVOKED      a revoked token
//   FORGED_MODE         "main" (default) or "busy" (the daemon's queue is full)
import OpenAI from "openai";
import { Agent, fetch as undiciFetch } from "undici";
import assert from "node:assert/strict";

const env = process.env;
const mode = env.FORGED_MODE ?? "main";

// Over the Unix socket: undici dials the socket for every request; the
// host in the URL is only the Host header.
const unixAgent = new Agent({ connect: { socketPath: env.FORGED_HTTP_SOCKET } });
const viaUnix = (url, init) => undiciFetch(url, { ...init, dispatcher: unixAgent });

function client(transport, apiKey, fetchImpl) {
  const opts = { apiKey, maxRetries: 0, timeout: 120_000 };
  if (transport === "unix") {
    return new OpenAI({ ...opts, baseURL: "http://forged/v1", fetch: viaUnix });
  }
  return new OpenAI({ ...opts, baseURL: env.FORGED_HTTP_URL + "/v1", ...(fetchImpl ? { fetch: fetchImpl } : {}) });
}

const greedy = { temperature: 0, max_tokens: 12, chat_template_kwargs: { enable_thinking: false } };
const hello = [{ role: "user", content: "Say hello." }];

async function expectError(promise, status, check) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, `not an APIError: ${e}`);
    assert.equal(e.status, status, `status ${e.status}: ${e.message}`);
    check?.(e);
    return e;
  }
  throw new Error(`expected HTTP ${status}, got a success`);
}

async function run(name, fn) {
  await fn();
  console.log(`PASS ${name}`);
}

async function mainChecks(transport, ai) {
  const t = (n) => `${transport}: ${n}`;
  await run(t("models"), async () => {
    const list = await ai.models.list();
    assert.equal(list.data.length, 1);
    const m = list.data[0];
    assert.equal(m.object, "model");
    assert.ok(m.id && m.revision && m.context_entries.length > 0, JSON.stringify(m));
  });

  let whole;
  await run(t("chat"), async () => {
    whole = await ai.chat.completions.create({ model: "forged", messages: hello, ...greedy });
    assert.equal(whole.object, "chat.completion");
    assert.equal(whole.choices.length, 1);
    const c = whole.choices[0];
    assert.equal(c.message.role, "assistant");
    assert.equal(typeof c.message.content, "string");
    assert.ok(["stop", "length"].includes(c.finish_reason), c.finish_reason);
    const u = whole.usage;
    assert.ok(u.prompt_tokens > 0 && u.completion_tokens > 0, JSON.stringify(u));
    assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
    assert.equal(typeof u.prompt_tokens_details.cached_tokens, "number");
  });

  await run(t("streamed chat with usage equals the whole answer"), async () => {
    const stream = await ai.chat.completions.create({
      model: "forged", messages: hello, ...greedy, stream: true, stream_options: { include_usage: true },
    });
    let text = "", finish = null, usage = null, chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      assert.equal(chunk.object, "chat.completion.chunk");
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        text += c.delta.content ?? "";
        finish = c.finish_reason ?? finish;
      }
    }
    assert.ok(chunks > 2, `only ${chunks} chunks`);
    assert.ok(text.length > 0, "the greedy answer is empty: nothing to compare");
    assert.equal(text, whole.choices[0].message.content);
    assert.equal(finish, whole.choices[0].finish_reason);
    assert.equal(usage?.completion_tokens, whole.usage.completion_tokens);
    assert.equal(usage?.prompt_tokens, whole.usage.prompt_tokens);
  });

  await run(t("completions"), async () => {
    const c = await ai.completions.create({ model: "forged", prompt: "Once upon a time", temperature: 0, max_tokens: 6 });
    assert.equal(c.object, "text_completion");
    assert.equal(typeof c.choices[0].text, "string");
    assert.ok(c.usage.completion_tokens > 0);
  });

  const tools = [{
    type: "function",
    function: {
      name: "get_weather", description: "Weather in a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  }];
  await run(t("tool call round trip (assistant tool_calls, tool message, answer)"), async () => {
    const r = await ai.chat.completions.create({
      model: "forged", tools, ...greedy,
      messages: [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
        { role: "tool", tool_call_id: "call_1", content: "18C and sunny" },
      ],
    });
    assert.equal(r.choices[0].message.role, "assistant");
    assert.ok(r.usage.prompt_tokens > whole.usage.prompt_tokens, "the tool turn was not rendered into the prompt");
  });

  await run(t("bad field is 400 naming it"), async () => {
    await expectError(ai.chat.completions.create({ model: "forged", messages: hello, temperature: 7 }), 400, (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError);
      assert.equal(e.param, "temperature");
      assert.equal(e.type, "invalid_request_error");
    });
    await expectError(ai.chat.completions.create({ model: "forged", messages: [{ role: "wizard", content: "x" }] }), 400,
      (e) => assert.equal(e.param, "messages[0].role"));
  });

  const constrained = { temperature: 1, seed: 7, max_tokens: 400, chat_template_kwargs: { enable_thinking: false } };
  await run(t("response_format json_schema: the answer parses and follows the schema"), async () => {
    const format = (json_schema, extra = {}) => ai.chat.completions.create({ model: "forged", messages: hello, ...constrained, ...extra,
      response_format: { type: "json_schema", json_schema } });
    await expectError(format({ schema: { type: "object" } }), 400, (e) => assert.equal(e.param, "response_format.json_schema.name"));
    await expectError(format({ name: "answer", schema: { type: "array", uniqueItems: true } }), 400,
      (e) => { assert.equal(e.param, "response_format"); assert.match(e.message, /uniqueItems/); });
    const schema = { type: "object", properties: { mood: { enum: ["happy", "sad"] }, n: { type: "integer", minimum: 1, maximum: 9 },
      tags: { type: "array", items: { type: "string", maxLength: 5 }, maxItems: 2 } }, required: ["mood", "n", "tags"], additionalProperties: false };
    for (const seed of [1, 2, 3]) {
      const r = await format({ name: "answer", strict: true, schema }, { seed });
      assert.equal(r.choices[0].finish_reason, "stop", `seed ${seed}: ${r.choices[0].message.content}`);
      const v = JSON.parse(r.choices[0].message.content);
      assert.deepEqual(Object.keys(v), ["mood", "n", "tags"], "properties in the schema's order, nothing else");
      assert.ok(["happy", "sad"].includes(v.mood) && Number.isInteger(v.n) && v.n >= 1 && v.n <= 9);
      assert.ok(Array.isArray(v.tags) && v.tags.length <= 2 && v.tags.every((s) => typeof s === "string" && [...s].length <= 5));
    }
    const any = await ai.chat.completions.create({ model: "forged", messages: hello, ...constrained, response_format: { type: "json_object" } });
    JSON.parse(any.choices[0].message.content); // any JSON value
  });

  await run(t("tool_choice required forces a well-formed call of the tool"), async () => {
    const bounded = [{ type: "function", function: { name: "get_weather",
      parameters: { type: "object", properties: { city: { type: "string", maxLength: 10 } }, required: ["city"], additionalProperties: false } } }];
    const r = await ai.chat.completions.create({ model: "forged", messages: [{ role: "user", content: "Weather?" }], tools: bounded,
      tool_choice: "required", ...constrained, max_tokens: 150 });
    const c = r.choices[0];
    assert.equal(c.finish_reason, "tool_calls", JSON.stringify(c.message));
    assert.equal(c.message.tool_calls.length, 1);
    assert.equal(c.message.tool_calls[0].function.name, "get_weather");
    assert.equal(typeof JSON.parse(c.message.tool_calls[0].function.arguments).city, "string");
  });

  await run(t("context exceeded is context_length_exceeded"), async () => {
    const long = "word ".repeat(4000);
    await expectError(ai.chat.completions.create({ model: "forged", messages: [{ role: "user", content: long }], max_tokens: 8 }), 400,
      (e) => assert.equal(e.code, "context_length_exceeded"));
  });
}

async function tokenChecks() {
  const noAuth = (url, init) => {
    const h = new Headers(init.headers);
    h.delete("authorization");
    return fetch(url, { ...init, headers: h });
  };
  for (const [name, ai] of [
    ["wrong token", client("tcp", "fgd_wrong")],
    ["revoked token", client("tcp", env.FORGED_REVOKED)],
    ["missing token", client("tcp", "unused", noAuth)],
  ]) {
    await run(`tcp: ${name} is 401`, async () => {
      await expectError(ai.models.list(), 401, (e) => assert.ok(e instanceof OpenAI.AuthenticationError));
      await expectError(ai.chat.completions.create({ model: "forged", messages: hello, ...greedy }), 401);
    });
  }
}

if (mode === "busy") {
  for (const [transport, ai] of [["unix", client("unix", "unused")], ["tcp", client("tcp", env.FORGED_TOKEN)]]) {
    await run(`${transport}: busy is 429 with Retry-After`, async () => {
      await expectError(ai.chat.completions.create({ model: "forged", messages: hello, ...greedy }), 429, (e) => {
        assert.ok(e instanceof OpenAI.RateLimitError);
        assert.ok(e.headers.get("retry-after"), "no Retry-After");
      });
    });
  }
} else {
  await mainChecks("unix", client("unix", "unused"));
  await mainChecks("tcp", client("tcp", env.FORGED_TOKEN));
  await tokenChecks();
}
console.log("ALL PASS");
