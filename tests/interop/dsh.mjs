// Drives the real DeepSeek Harness packages for tests/test_interop.py.
// Reads one JSON request on stdin, prints one JSON answer on stdout: {ok: true, result} or {ok: false, error}.
//
//   write      {root, compression, packChunks, sessions: [{meta, batches: [[event, ...], ...]}]}
//              each batch goes through JsonlSessionPersistence.appendBatch, the method dsh's
//              persistence coordinator calls for every durable batch (the first one materialises).
//   list       {root, compression}                 -> headers, as dsh's list() returns them
//   load       {root, compression, ids}            -> per id: loadStored() {meta, events, torn}
//                                                     and inspect() (dsh's validated, migrated view)
//   raw        {root, compression, id}             -> readRaw().content (the stored JSONL text)
//   surface    {root, compression, id}             -> dsh's session layer on the inspected log: the
//                                                     surface nodes and deriveMessages() (role + text,
//                                                     and whole as ``derived``)
//   uri        {ids, texts}                        -> encode / parse with dsh-session-reference
//   prepare    {target, references, snapshots, config} -> SessionReferenceResolver.prepare
//   batch      {requests: [{op, ...}, ...]}          -> every request's result, in order, in one process
//   timed      {kind, repeats, ...}                  -> in-process timings for bench/versus.py (milliseconds):
//              kind 'load' {root, compression, id, busy?}: loadStored(id) on a new backend each run, and
//              its events; with busy [{root, compression}], those stores are listed first and their
//              headers held, and each run's load is held until the next one (a busy process)
//              kind 'list' {root, compression}: the first list() of a new backend (cold) and a
//              second one (warm), and the headers; kind 'prepare' {prepare's request}: its result
//   serialize  {messages, system, port}            -> DeepSeekAdapter.stream against a local server;
//                                                     the server records the request body
import { Context } from '@deepseek-ai/cordis';
import SessionStore from '@deepseek-ai/dsh-session';
import { JsonlSessionPersistence } from '@deepseek-ai/dsh-session-persistence-jsonl';
import {
  SessionReferenceResolver,
  encodeSessionReferenceUri,
  parseSessionReferenceText,
} from '@deepseek-ai/dsh-session-reference';
import { DeepSeekAdapter, resolveAdapterOptions } from '@deepseek-ai/dsh-llm-deepseek';
import { createServer } from 'node:http';

async function persistence(root, compression, packChunks = true) {
  const ctx = new Context();
  ctx.plugin(SessionStore);
  ctx.plugin(JsonlSessionPersistence, { root, compression, packChunks });
  // Cordis starts plugins asynchronously; the service appears once its dependencies are up.
  for (let tries = 0; ctx.sessionPersistence === undefined && tries < 200; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (ctx.sessionPersistence === undefined) throw new Error('the JSONL persistence plugin did not start');
  return ctx.sessionPersistence;
}

const errorText = (error) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

const operations = {
  async write({ root, compression, packChunks, sessions }) {
    const backend = await persistence(root, compression, packChunks);
    for (const { meta, batches } of sessions) {
      let materialized = false;
      for (const batch of batches) {
        await backend.appendBatch(meta, batch, materialized);
        materialized = true;
      }
    }
    return backend.locate(sessions[0].meta).path;
  },
  async list({ root, compression }) {
    return (await persistence(root, compression)).list();
  },
  async load({ root, compression, ids }) {
    const backend = await persistence(root, compression);
    const out = {};
    for (const id of ids) {
      let stored;
      try {
        stored = await backend.loadStored(id);
      } catch (error) {
        out[id] = { error: errorText(error) };
        continue;
      }
      let inspected;
      try {
        const view = await backend.inspect(id);
        inspected = { ok: true, types: view.events.map((event) => event.type), events: view.events.length };
      } catch (error) {
        inspected = { ok: false, error: errorText(error) };
      }
      out[id] =
        stored === undefined
          ? null
          : { meta: stored.meta, events: stored.events, torn: stored.tornMarker ?? null, inspect: inspected };
    }
    return out;
  },
  async surface({ root, compression, id }) {
    const backend = await persistence(root, compression);
    const view = await backend.inspect(id);
    const ctx = new Context();
    ctx.plugin(SessionStore);
    for (let tries = 0; ctx.sessions === undefined && tries < 200; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const session = ctx.sessions.prepare(id, {
      seedSource: 'persistence',
      seed: structuredClone(view.events),
      meta: structuredClone(view.meta),
    });
    const text = (content) =>
      content
        .filter((block) => block.type === 'text')
        .map((block) => block.text)
        .join('');
    return {
      nodes: [...session.surface.nodes],
      messages: session.deriveMessages().map((message) => ({ role: message.role, text: text(message.content) })),
      derived: session.deriveMessages(),
    };
  },
  async raw({ root, compression, id }) {
    return (await (await persistence(root, compression)).readRaw(id)).content;
  },
  async uri({ ids, texts }) {
    const parsed = texts.map((text) => {
      try {
        return { ok: true, value: parseSessionReferenceText(text) };
      } catch (error) {
        return { ok: false, code: error.code, message: error.message };
      }
    });
    return { uris: ids.map((id) => encodeSessionReferenceUri(id)), parsed };
  },
  async prepare({ target, references, snapshots, config }) {
    // The resolver's own prepare and renderSources, over a session query that serves given snapshots.
    const self = {
      config: { maxReferences: 3, candidateLimit: 50, maxReferenceBytes: 65536, ...config },
      ctx: {
        sessionQuery: {
          async readSurface(id) {
            if (!(id in snapshots)) throw new Error(`session "${id}" not found`);
            return snapshots[id];
          },
        },
      },
      renderSources: SessionReferenceResolver.prototype.renderSources,
    };
    try {
      const agent = { id: target, session: { header: { id: target } } };
      const prepared = await SessionReferenceResolver.prototype.prepare.call(self, agent, [], references);
      const context = prepared.additionalContext;
      return { ok: true, text: context.content[0].text, references: context.source.references };
    } catch (error) {
      return { ok: false, code: error.code, message: error.message };
    }
  },
  async timed({ kind, repeats, ...request }) {
    const clock = () => Number(process.hrtime.bigint()) / 1e6;
    const samples = [];
    const warm = [];
    const held = [];
    for (const store of request.busy ?? []) {
      held.push(await (await persistence(store.root, store.compression)).list());
    }
    let result;
    for (let run = 0; run < repeats; run++) {
      if (kind === 'load') {
        const backend = await persistence(request.root, request.compression);
        const started = clock();
        const stored = await backend.loadStored(request.id);
        samples.push(clock() - started);
        result = { meta: stored.meta, events: stored.events };
      } else if (kind === 'list') {
        const backend = await persistence(request.root, request.compression);
        let started = clock();
        await backend.list();
        samples.push(clock() - started);
        started = clock();
        result = await backend.list();
        warm.push(clock() - started);
      } else if (kind === 'prepare') {
        const started = clock();
        result = await operations.prepare(request);
        samples.push(clock() - started);
      } else {
        throw new Error(`unknown timing kind ${kind}`);
      }
    }
    return { samples, warm, result, held: held.map((headers) => headers.length) };
  },
  async batch({ requests }) {
    const results = [];
    for (const request of requests) results.push(await operations[request.op](request));
    return results;
  },
  async serialize({ messages, system }) {
    let body;
    const server = createServer((request, response) => {
      const chunks = [];
      request.on('data', (chunk) => chunks.push(chunk));
      request.on('end', () => {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end('data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n');
      });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const baseURL = `http://127.0.0.1:${server.address().port}`;
    const adapter = new DeepSeekAdapter({
      options: () => resolveAdapterOptions({ baseURL }, undefined),
      resolveApiKey: async () => 'sk-interop',
      resolveUserId: () => 'interop',
    });
    try {
      for await (const _chunk of adapter.stream({ model: 'deepseek-chat', messages, system })) {
        // drain
      }
    } finally {
      server.close();
    }
    return body;
  },
};

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
try {
  const result = await operations[request.op](request);
  process.stdout.write(JSON.stringify({ ok: true, result }));
} catch (error) {
  process.stdout.write(JSON.stringify({ ok: false, error: errorText(error) }));
}
