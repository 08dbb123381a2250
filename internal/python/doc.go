// SPDX-License-Identifier: Apache-2.0

// Package python finds CPython interpreters (3.8-3.13) in processes and
// turns the frames the sampling program copies from them into Python
// frames: function, file and line.
//
// The BPF side (bpf/python.h) walks the sampled thread's frame chain and
// copies each frame's code-object address and instruction; it needs the
// address of _PyRuntime and a handful of offsets, which Find gives from
// the interpreter's symbols and the version table (Layout; checked against
// a 3.13 interpreter's own _Py_DebugOffsets, and by the tests against each
// installed interpreter's headers). Resolve then
// reads each code object once from the target's memory (/proc/PID/mem,
// never stopping it): its qualified name (co_qualname, 3.11+; co_name in
// 3.8-3.10, whose code objects have no qualified name), file name and line
// table, and turns an instruction into a line with that version's table
// format (co_lnotab in 3.8 and 3.9, co_linetable's address ranges in 3.10,
// the location table in 3.11+).
//
// Frames also say where each call of the interpreter's eval loop
// (_PyEval_EvalFrameDefault) begins, so that the sampler can put them in
// place of the native eval-loop frames of the same sample.
//
// python imports internal/proc only.
package python
