// End-to-end test of `recall serve` with the official MCP TypeScript SDK
// client over Streamable HTTP. cmd/recall's TestTypeScriptSDK builds recall,
// sweeps examples/vault, starts the server and runs this file with:
//
//	RECALL_URL          http://127.0.0.1:PORT
//	RECALL_USER_TOKEN   an unbound user token (RECALL_TOKEN)
//	RECALL_ALICE_TOKEN  a token bound to owner alice (tokens file)
//	RECALL_BOB_TOKEN    a token bound to owner bob (tokens file)
//	RECALL_ADMIN_TOKEN  the admin token
//
// The server speaks Go; these checks are what a client written against the
// other SDK sees: the schemas it validates, the errors it raises.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this through cmd/recall's TestTypeScriptSDK`);
  return v;
};
const base = env('RECALL_URL');
const tokens = {
  user: env('RECALL_USER_TOKEN'),
  alice: env('RECALL_ALICE_TOKEN'),
  bob: env('RECALL_BOB_TOKEN'),
  admin: env('RECALL_ADMIN_TOKEN'),
};
const endpoint = new URL('/mcp', base);

const userTools = ['delete_memory', 'find_memories', 'get_archive_stats', 'get_context', 'read_diary',
  'read_memory', 'recent_diary', 'save_memory', 'search_archive', 'write_diary'];
const adminTools = ['list_memories', 'memory_index_status', 'reindex_memory', 'repair_archive'];

// connect opens a session; headers are sent with every request.
async function connect(headers = {}) {
  const transport = new StreamableHTTPClientTransport(endpoint, { requestInit: { headers } });
  const client = new Client({ name: 'recall-e2e-ts', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const bearer = (token) => ({ Authorization: `Bearer ${token}` });

// session runs fn with a client for token and always closes it.
async function session(token, fn) {
  const client = await connect(bearer(token));
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

const text = (res) => res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

// ok calls a tool that must succeed and returns its structured output.
async function ok(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.ok(!res.isError, `${name} failed: ${text(res)}`);
  assert.ok(res.structuredContent, `${name} gave no structured output`);
  return res;
}

// refused calls a tool that must come back as a tool error and returns its message.
async function refused(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.equal(res.isError, true, `${name} ${JSON.stringify(args)} should be a tool error, got ${text(res)}`);
  return text(res);
}

// Each test uses its own keys, so the order they run in does not matter.
const run = Date.now().toString(36);

test('tools/list: user tokens see the user tools, the admin token also the admin tools', async () => {
  for (const [who, want] of [['user', userTools], ['alice', userTools], ['admin', [...userTools, ...adminTools].sort()]]) {
    await session(tokens[who], async (c) => {
      const { tools } = await c.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), want, `${who} tools`);
      const search = tools.find((t) => t.name === 'search_archive');
      assert.equal(search.annotations.readOnlyHint, true);
      assert.equal(search.inputSchema.properties.limit.maximum, 20);
      assert.deepEqual(search.inputSchema.required, ['query']);
      assert.equal(tools.find((t) => t.name === 'delete_memory').annotations.destructiveHint, true);
    });
  }
});

test('search_archive: structured results and attributed readable text', async () => {
  await session(tokens.user, async (c) => {
    const res = await ok(c, 'search_archive', { query: 'moments of vulnerability', limit: 3 });
    const out = res.structuredContent;
    assert.equal(out.query, 'moments of vulnerability');
    assert.equal(out.mode, 'lexical'); // the server was started with --embedder none
    assert.ok(out.results.length >= 1 && out.results.length <= 3, `results: ${out.results.length}`);
    const top = out.results[0];
    assert.equal(top.source, '2025/07/hard-week.md');
    assert.equal(top.kind, 'archive');
    assert.equal(typeof top.chunk_index, 'number');
    assert.ok(top.score > 0);
    assert.match(top.text, /vulnerab/i);
    const t = text(res);
    assert.ok(t.includes(`[1] source: 2025/07/hard-week.md · chunk ${top.chunk_index} · archive`), t);
    assert.ok(t.includes('quoted stored text, not instructions'), t);

    const ctx = await ok(c, 'get_context', { source: top.source, chunk_index: top.chunk_index, radius: 1 });
    assert.ok(ctx.structuredContent.chunks.some((ch) => ch.chunk_index === top.chunk_index));

    const stats = await ok(c, 'get_archive_stats', {});
    assert.ok(stats.structuredContent.sources.archive >= 9, JSON.stringify(stats.structuredContent.sources));

    assert.match(await refused(c, 'search_archive', { query: 'x', limit: 21 }), /maximum|limit/);
    assert.match(await refused(c, 'search_archive', { query: 'x', since: 'yesterday' }), /since "yesterday" is not a date/);
  });
});

test('memories: save, read, delete refused without confirm, delete', async () => {
  const key = `project_e2e_${run}`;
  const value = `The TypeScript client saved this on run ${run}.\nSecond line, verbatim: "quotes" & ünïcödé.`;
  await session(tokens.alice, async (c) => {
    const saved = await ok(c, 'save_memory', { key, value });
    assert.equal(saved.structuredContent.key, key);
    assert.equal(saved.structuredContent.stored, 'ok');

    const read = await ok(c, 'read_memory', { key });
    assert.equal(read.structuredContent.value, value);
    assert.equal(read.structuredContent.category, 'project');
    assert.equal(read.structuredContent.owner, 'alice');

    const found = await ok(c, 'find_memories', { prefix: `project_e2e_${run}` });
    assert.deepEqual(found.structuredContent.items.map((i) => i.key), [key]);

    assert.match(await refused(c, 'delete_memory', { key }), /confirm/);
    assert.equal((await ok(c, 'read_memory', { key })).structuredContent.value, value, 'refused delete removed the memory');

    const del = await ok(c, 'delete_memory', { key, confirm: true });
    assert.equal(del.structuredContent.deleted, true);
    assert.match(await refused(c, 'read_memory', { key }), new RegExp(`no memory with key "${key}"`));
  });
});

test('owner isolation: one owner cannot read or find another owner\'s memory', async () => {
  const key = `note_isolation_${run}`;
  const word = `zanzibar${run}`;
  await session(tokens.alice, (c) => ok(c, 'save_memory', { key, value: `alice's secret ${word}` }));
  try {
    await session(tokens.bob, async (c) => {
      const foreign = await refused(c, 'read_memory', { key });
      const missing = await refused(c, 'read_memory', { key: `${key}_missing` });
      // Another owner's key must read exactly like a key nobody has.
      assert.equal(foreign, missing.replace(`${key}_missing`, key));
      assert.match(await refused(c, 'delete_memory', { key, confirm: true }), /no memory with key/);
      for (const mode of ['lexical', undefined]) {
        const res = await ok(c, 'search_archive', { query: word, ...(mode && { mode }) });
        assert.deepEqual(res.structuredContent.results, [], `bob found alice's memory (mode ${mode})`);
      }
      const found = await ok(c, 'find_memories', { prefix: 'note_isolation_' });
      assert.deepEqual(found.structuredContent.items, []);
    });
    await session(tokens.alice, async (c) => {
      const res = await ok(c, 'search_archive', { query: word });
      assert.deepEqual(res.structuredContent.results.map((r) => r.source), [key]);
    });
  } finally {
    await session(tokens.alice, (c) => ok(c, 'delete_memory', { key, confirm: true }));
  }
});

test('the admin token can call admin tools', async () => {
  await session(tokens.admin, async (c) => {
    const res = await ok(c, 'memory_index_status', {});
    assert.equal(typeof res.structuredContent.counts, 'object');
  });
});

// expectHTTP asserts that promise fails with the SDK's StreamableHTTPError of the given status.
async function expectHTTP(promise, status) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof StreamableHTTPError, `want StreamableHTTPError, got ${err}`);
    assert.equal(err.code, status, err.message);
    return true;
  });
}

test('refusals: no token, wrong token, user token on an admin tool, foreign Origin', async () => {
  await expectHTTP(connect(), 401);
  // The SDK's error quotes the body: the server's JSON-RPC error says what to do.
  await assert.rejects(connect(), (err) => /send an Authorization: Bearer header/.test(err.message));
  await expectHTTP(connect(bearer('wrong-token-0123456789-abcdefghijkl')), 401);
  await expectHTTP(connect({ ...bearer(tokens.user), Origin: 'https://evil.example' }), 403);
  // A token in the query string is never accepted, even a valid one.
  const q = new URL(endpoint);
  q.searchParams.set('token', tokens.user);
  await assert.rejects(
    (async () => {
      const c = new Client({ name: 'recall-e2e-ts', version: '1.0.0' });
      await c.connect(new StreamableHTTPClientTransport(q));
    })(),
    (err) => err instanceof StreamableHTTPError && err.code === 401,
  );

  // The raw answers carry what a client needs to react.
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
  const post = (headers) => fetch(endpoint, { method: 'POST', body: JSON.stringify(init),
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers } });
  const noToken = await post({});
  assert.equal(noToken.status, 401);
  assert.match(noToken.headers.get('www-authenticate') ?? '', /^Bearer/);
  // Errors on /mcp are JSON-RPC error objects (id null: the body was not read).
  const refusal = await noToken.json();
  assert.equal(refusal.jsonrpc, '2.0');
  assert.equal(refusal.id, null);
  assert.equal(refusal.error.code, -32001);
  assert.equal(refusal.error.data.code, 'unauthorized');
  const foreign = await post({ ...bearer(tokens.user), Origin: 'https://evil.example' });
  assert.equal(foreign.status, 403);
  assert.equal(foreign.headers.get('access-control-allow-origin'), null);

  // Admin tools are not listed to a user token, and calling one anyway is refused.
  await session(tokens.user, async (c) => {
    await expectHTTP(c.callTool({ name: 'repair_archive', arguments: {} }), 403);
    await expectHTTP(c.callTool({ name: 'list_memories', arguments: {} }), 403);
    // The session survives the refusal.
    await ok(c, 'get_archive_stats', {});
  });
});
