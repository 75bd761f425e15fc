// A JSON document store in Node.js that saves the careful way: write a temporary
// file, fsync it, rename it over the document, fsync the directory.
//
//   node atomic_store.js save DIR VALUE_FILE   stores the JSON value of VALUE_FILE
//   node atomic_store.js load DIR              prints the value (null before any save)
//
// crashpoint verify --exec --save 'node examples/exec/atomic_store.js save {dir} {value}' \
//                          --load 'node examples/exec/atomic_store.js load {dir}' --model all
'use strict';
const fs = require('fs');
const path = require('path');

const [, , op, dir, valueFile] = process.argv;
const main = path.join(dir, 'doc.json');

function writeAll(fd, buf) {
  let done = 0;
  while (done < buf.length) done += fs.writeSync(fd, buf, done, buf.length - done);
}

if (op === 'save') {
  const data = Buffer.from(JSON.stringify(JSON.parse(fs.readFileSync(valueFile, 'utf8'))));
  const tmp = main + '.tmp';
  try {
    const fd = fs.openSync(tmp, 'w');
    try {
      writeAll(fd, data);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, main);
  } catch (err) {
    try { fs.unlinkSync(tmp); } catch (_) { /* already gone */ }
    process.stderr.write(`save failed: ${err.code || err.message}\n`);
    process.exit(1);
  }
  try {
    const d = fs.openSync(dir, 'r');
    try { fs.fsyncSync(d); } finally { fs.closeSync(d); }
  } catch (err) {
    process.stderr.write(`directory fsync failed: ${err.code || err.message}\n`);
    process.exit(1);
  }
} else if (op === 'load') {
  let text;
  try {
    text = fs.readFileSync(main, 'utf8');
  } catch (err) {
    if (err.code === 'ENOENT') {
      process.stdout.write('null');
      process.exit(0);
    }
    process.stderr.write(`load failed: ${err.code}\n`);
    process.exit(1);
  }
  process.stdout.write(JSON.stringify(JSON.parse(text)));
} else {
  process.stderr.write('usage: atomic_store.js save DIR VALUE_FILE | load DIR\n');
  process.exit(2);
}
