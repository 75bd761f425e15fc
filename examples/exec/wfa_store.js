// npm write-file-atomic (pinned in package.json / package-lock.json) as a document
// store: the control, and its findings if any (docs/decisions.md, "Exec (issue 13)").
//
//   npm install --prefix examples/exec      (once: installs the pinned version)
//   node wfa_store.js save DIR VALUE_FILE   stores the JSON value with writeFileAtomic.sync
//   node wfa_store.js load DIR              prints the value (null before any save)
'use strict';
const fs = require('fs');
const path = require('path');
const writeFileAtomic = require('write-file-atomic');

const [, , op, dir, valueFile] = process.argv;
const main = path.join(dir, 'doc.json');

if (op === 'save') {
  const text = JSON.stringify(JSON.parse(fs.readFileSync(valueFile, 'utf8')));
  try {
    writeFileAtomic.sync(main, text);
  } catch (err) {
    process.stderr.write(`save failed: ${err.code || err.message}\n`);
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
  process.stderr.write('usage: wfa_store.js save DIR VALUE_FILE | load DIR\n');
  process.exit(2);
}
