// SPDX-License-Identifier: Apache-2.0
//
// burn.js SECONDS TRUTH: burnA and burnB have identical bodies; the loop
// calls burnA three times for each call of burnB, for SECONDS, and writes
// the CPU time spent in each (process.cpuUsage around each call, in µs: the
// process's, V8's few background threads included) to
// TRUTH as "ns_a N" and "ns_b N" lines. Run with --perf-basic-prof (and
// --no-turbo-inlining, so that the optimizer keeps them apart from the loop).
'use strict';
const fs = require('fs');

function burnA(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s += Math.sqrt(i) * 1.0001;
  return s;
}

function burnB(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s += Math.sqrt(i) * 1.0001;
  return s;
}

const seconds = Number(process.argv[2] || 2);
const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; };
let nsA = 0, nsB = 0, sink = 0;
while (process.hrtime.bigint() < end) {
  for (let k = 0; k < 3; k++) {
    const t0 = cpu();
    sink += burnA(200000);
    nsA += (cpu() - t0) * 1000;
  }
  const t0 = cpu();
  sink += burnB(200000);
  nsB += (cpu() - t0) * 1000;
}
if (process.argv[3]) fs.writeFileSync(process.argv[3], `ns_a ${nsA}\nns_b ${nsB}\nsink ${sink > 0 ? 1 : 0}\n`);
// Idle a second before exiting: a profiler rereads the process's memory map
// (the JIT code is mapped after the first samples) while it drains them, and
// under load that can lag the samples by a second.
setTimeout(() => {}, 1000);
