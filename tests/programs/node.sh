#!/usr/bin/env bash
# node.js: a JIT-compiled language runtime, itself a large C++ program (V8,
# libuv, zlib, OpenSSL), with threads of its own. V8 keeps JavaScript objects
# in its own heap, so the workload uses what node puts in malloc and operator
# new: Buffers and typed arrays (their backing stores), zlib streams, hashes,
# and four worker threads whose results travel back as messages (allocated
# in one thread, freed in another).
source "$(dirname "$0")/common.sh"
need node

cat >"$WORK/workload.js" <<'JS'
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
const crypto = require('crypto');
const zlib = require('zlib');

function work(seed) {
  const hash = crypto.createHash('sha256');
  let kept = [];
  for (let i = 0; i < 4000; i++) {
    const size = 16 + ((i * 7919 + seed * 104729) % 70000);
    const buffer = Buffer.alloc(size, (i + seed) & 0xff);
    buffer.writeUInt32LE(i, 0);
    hash.update(buffer);
    if (i % 3 === 0) kept.push(buffer);
    if (kept.length > 200) kept = kept.slice(100);
  }
  const text = Buffer.from(Array.from({ length: 20000 }, (_, i) => `line ${i} of ${seed}`).join('\n'));
  const packed = zlib.deflateSync(text, { level: 6 });
  const unpacked = zlib.inflateSync(packed);
  if (!unpacked.equals(text)) throw new Error('zlib round trip differs');
  hash.update(packed);
  return `${seed}:${hash.digest('hex')}:${packed.length}:${kept.length}`;
}

if (isMainThread) {
  const seeds = [1, 2, 3, 4];
  Promise.all(seeds.map((seed) => new Promise((resolve, reject) => {
    const worker = new Worker(__filename, { workerData: seed });
    worker.on('message', resolve);
    worker.on('error', reject);
  }))).then((results) => {
    results.push(work(0));
    console.log(results.join('\n'));
  }, (error) => { console.error(error); process.exit(1); });
} else {
  parentPort.postMessage(work(workerData));
}
JS
compare_runs node 4194304 node "$WORK/workload.js"
