// The seed's FileStateStorage, ported to Node.js as published (SPEC.md §6, "seed"):
// save writes tmp, rotates main to bak (deleting an old bak first), renames tmp to
// main, then deletes the legacy `ended` marker; no fsync anywhere. load reads main,
// falls back to bak on any failure but an unsupported version, and applies a legacy
// marker (content `1`) to whatever it loads. mark_not_resumable writes the marker in
// place. delete removes bak, main, tmp, ended.
//
// It speaks crashpoint's state-storage protocol: one JSON request on stdin
//   {"op": "save"|"load"|"load_or_create"|"delete"|"exists"|"mark_not_resumable",
//    "sessionId": "...", "state": {...}}
// and one JSON reply on stdout: {"ok": true, "state": {...}} ({"ok": true, "exists": b}
// for exists) or {"ok": false, "code": "<SPEC.md §5 code>", "message": "..."}; or a JSON
// array of requests, answered by the array of their replies (the optional batch form).
//
//   crashpoint verify --exec 'node examples/exec/seed_storage.js {dir}' --kind state-storage
'use strict';
const fs = require('fs');
const path = require('path');

const base = process.argv[2];
const SAFE = /^[0-9A-Za-z._-]$/;
const MAX_STEM = 240;

class StorageError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

function safeName(id) {
  if (typeof id !== 'string') throw new StorageError('invalid_session_id', 'not a string');
  if (!id) throw new StorageError('invalid_session_id', 'empty');
  for (const bad of ['..', '/', '\\', '\0']) {
    if (id.includes(bad)) throw new StorageError('invalid_session_id', `contains ${bad}`);
  }
  if (id.length > MAX_STEM) throw new StorageError('invalid_session_id', 'too long');
  let out = '';
  for (const ch of id) out += SAFE.test(ch) ? ch : (ch.codePointAt(0) > 0xffff ? '__' : '_');
  if (out === '.' || out === '..' || out.length > MAX_STEM) {
    throw new StorageError('invalid_session_id', 'bad file name');
  }
  return out;
}

const mainPath = (id) => path.join(base, safeName(id) + '.json');

// SPEC.md §3: every tool call answered by exactly one later tool message; unanswered
// calls only in the last batch, when awaiting approval (core/_pairing.py).
function toolCallsPaired(messages, awaitingApproval) {
  const pending = new Map();
  const seen = new Set();
  let lastBatch = -1;
  messages.forEach((m, i) => {
    if (m.role === 'assistant' && m.toolCalls && m.toolCalls.length) {
      lastBatch = i;
      for (const c of m.toolCalls) {
        if (seen.has(c.id)) pending.set(null, -2);
        seen.add(c.id);
        pending.set(c.id, i);
      }
    } else if (m.role === 'tool') {
      if (m.toolCallId == null || !pending.has(m.toolCallId)) pending.set(null, -2);
      else pending.delete(m.toolCallId);
    }
  });
  if (pending.has(null)) return false;
  if (pending.size === 0) return true;
  if (!awaitingApproval) return false;
  for (const i of pending.values()) if (i !== lastBatch) return false;
  return messages.slice(lastBatch + 1).every((m) => m.role === 'tool');
}

function unansweredCalls(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'assistant' && m.toolCalls && m.toolCalls.length) {
      const answered = new Set(messages.slice(i + 1).filter((x) => x.role === 'tool')
        .map((x) => x.toolCallId));
      return m.toolCalls.filter((c) => !answered.has(c.id));
    }
  }
  return [];
}

function statePaired(state) {
  const messages = (state.history && state.history.messages) || [];
  const approval = state.pendingApproval;
  if (approval == null) return toolCallsPaired(messages, false);
  if (!toolCallsPaired(messages, true)) return false;
  const want = (approval.toolCalls || []).map((c) => c.id);
  const got = unansweredCalls(messages).map((c) => c.id);
  return want.length === got.length && want.every((id, k) => id === got[k]);
}

function writeFile(p, text) {
  const fd = fs.openSync(p, 'w');
  try {
    const buf = Buffer.from(text);
    let done = 0;
    while (done < buf.length) done += fs.writeSync(fd, buf, done, buf.length - done);
  } finally {
    fs.closeSync(fd);
  }
}

function save(state) {
  const main = mainPath(state.sessionId);
  if (!statePaired(state)) throw new StorageError('history_unpaired', 'unpaired tool calls');
  const tmp = main + '.tmp', bak = main + '.bak', ended = main + '.ended';
  try {
    fs.mkdirSync(base, { recursive: true });
    writeFile(tmp, JSON.stringify(state));
    if (fs.existsSync(main)) {
      if (fs.existsSync(bak)) fs.unlinkSync(bak);
      fs.renameSync(main, bak);
    }
    fs.renameSync(tmp, main);
    if (fs.existsSync(ended)) fs.unlinkSync(ended);
  } catch (err) {
    if (err instanceof StorageError) throw err;
    try { if (fs.existsSync(tmp)) fs.unlinkSync(tmp); } catch (_) { /* best effort */ }
    throw new StorageError('state_save_failed', `save: ${err.code || err.message}`);
  }
}

function decodeFile(p, id) {
  let text;
  try { text = fs.readFileSync(p, 'utf8'); } catch (err) {
    throw new StorageError('state_corrupt', `cannot read: ${err.code}`);
  }
  let state;
  try { state = JSON.parse(text); } catch (err) {
    throw new StorageError('state_corrupt', 'unparseable JSON');
  }
  if (state === null || typeof state !== 'object' || Array.isArray(state)) {
    throw new StorageError('state_corrupt', 'not an object');
  }
  const v = state.schemaVersion;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
    throw new StorageError('state_corrupt', 'bad schemaVersion');
  }
  if (v > 3) throw new StorageError('schema_version_unsupported', `version ${v}`);
  if (state.sessionId !== id) throw new StorageError('state_corrupt', 'another session');
  return state;
}

function readSnapshot(p, main, id) {
  const state = decodeFile(p, id);
  if (fs.existsSync(main + '.ended')) {
    state.isRunning = false;
    delete state.pendingRunCheckpoint;
  }
  return state;
}

function load(id) {
  const main = mainPath(id), bak = main + '.bak';
  let mainError = null;
  const mainExists = fs.existsSync(main);
  if (mainExists) {
    try { return readSnapshot(main, main, id); } catch (err) {
      if (err.code === 'schema_version_unsupported') throw err;
      mainError = err;
    }
  }
  if (!fs.existsSync(bak)) {
    if (mainError) throw new StorageError('state_corrupt', 'main is corrupt and there is no bak');
    throw new StorageError('session_not_found', 'no main, no bak');
  }
  try { return readSnapshot(bak, main, id); } catch (err) {
    if (err.code === 'schema_version_unsupported') throw err;
    throw new StorageError('state_corrupt', 'main and bak corrupt');
  }
}

function markNotResumable(id) {
  const main = mainPath(id);
  try {
    fs.mkdirSync(base, { recursive: true });
    writeFile(main + '.ended', '1');
  } catch (err) {
    if (err instanceof StorageError) throw err;
    throw new StorageError('state_save_failed', `mark_not_resumable: ${err.code}`);
  }
}

function del(id) {
  const main = mainPath(id);
  try {
    if (!fs.existsSync(base)) return;
    for (const p of [main + '.bak', main, main + '.tmp', main + '.ended']) {
      if (fs.existsSync(p)) fs.unlinkSync(p);
    }
  } catch (err) {
    if (err instanceof StorageError) throw err;
    throw new StorageError('state_save_failed', `delete: ${err.code}`);
  }
}

function handle(req) {
  switch (req.op) {
    case 'save': save(req.state); return { ok: true };
    case 'load': return { ok: true, state: load(req.sessionId) };
    case 'load_or_create':
      try { return { ok: true, state: load(req.sessionId) }; } catch (err) {
        if (err.code !== 'session_not_found') throw err;
      }
      save(req.state);
      return { ok: true, state: req.state };
    case 'delete': del(req.sessionId); return { ok: true };
    case 'exists': {
      const main = mainPath(req.sessionId);
      return { ok: true, exists: fs.existsSync(main) || fs.existsSync(main + '.bak') };
    }
    case 'mark_not_resumable': markNotResumable(req.sessionId); return { ok: true };
    default: return { ok: false, code: 'bad_request', message: `unknown op ${req.op}` };
  }
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { input += chunk; });
function answer(req) {
  try {
    return handle(req);
  } catch (err) {
    return err instanceof StorageError
      ? { ok: false, code: err.code, message: err.message }
      : { ok: false, code: 'internal', message: String(err && err.stack || err) };
  }
}

// A JSON array of requests (crashpoint sends one: the loads of one crash state) is
// answered by an array of replies, in order; this storage keeps nothing in memory
// between requests, so each is answered as a fresh process would answer it.
process.stdin.on('end', () => {
  let req;
  try {
    req = JSON.parse(input);
  } catch (err) {
    process.stdout.write(JSON.stringify({ ok: false, code: 'internal', message: String(err && err.stack || err) }));
    return;
  }
  process.stdout.write(JSON.stringify(Array.isArray(req) ? req.map(answer) : answer(req)));
});
