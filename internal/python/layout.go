// SPDX-License-Identifier: Apache-2.0

package python

import "fmt"

// None marks a field a version does not have.
const None = -1

// Layout is where one CPython minor version keeps what the stack walk and
// the frame resolution read: byte offsets into its structures, None where
// the version has no such field. The BPF walk (bpf/python.h) reads the
// runtime, interpreter, thread and frame fields; user space the code
// object, string and bytes fields.
type Layout struct {
	Major, Minor int
	// RuntimeInterpHead is _PyRuntimeState.interpreters.head (the main
	// interpreter is the list's last, the first created; with no
	// subinterpreters it is the only one).
	RuntimeInterpHead int
	// InterpThreadsHead is PyInterpreterState.tstate_head (3.8-3.10) or
	// .threads.head (3.11+).
	InterpThreadsHead int
	// ThreadNext and ThreadID are PyThreadState.next and .thread_id (the
	// thread's pthread_t: on x86-64 glibc its thread pointer, fsbase).
	ThreadNext, ThreadID int
	// ThreadFrame is PyThreadState.frame (3.8-3.10, a PyFrameObject),
	// .cframe (3.11, 3.12, whose CFrameCurrent is the current
	// _PyInterpreterFrame) or .current_frame (3.13).
	ThreadFrame, CFrameCurrent int
	// FramePrevious, FrameCode and FrameInstr are PyFrameObject's f_back,
	// f_code and f_lasti (3.8-3.10: an int, a byte offset in 3.8 and 3.9,
	// an index of 2-byte code units in 3.10), or _PyInterpreterFrame's
	// previous, f_code (f_executable in 3.13) and prev_instr (instr_ptr in
	// 3.13: a pointer into the code object's co_code_adaptive).
	FramePrevious, FrameCode, FrameInstr int
	// FrameOwner is _PyInterpreterFrame.is_entry (3.11: set on the first
	// frame an eval-loop call runs) or .owner (3.12+: OwnerCStack marks
	// the entry frame an eval-loop call pushes below the frames it runs).
	FrameOwner, OwnerCStack int
	// Code fields: co_qualname (3.11+; older versions name a frame by
	// co_name), co_name, co_filename, co_firstlineno (an int),
	// co_lnotab (3.8, 3.9) or co_linetable (3.10+), co_code_adaptive
	// (3.11+: where the instructions start).
	CodeQualname, CodeName, CodeFilename, CodeFirstLine, CodeLineTable, CodeAdaptive int
	// Strings: PyASCIIObject.length and .state, and where a compact
	// string's characters start, ASCII (sizeof(PyASCIIObject)) or not
	// (sizeof(PyCompactUnicodeObject)).
	UnicodeLength, UnicodeState, UnicodeASCIIData, UnicodeCompactData int
	// Bytes: PyBytesObject's ob_size and ob_sval.
	BytesSize, BytesData int
}

// Version is "3.11".
func (l Layout) Version() string { return fmt.Sprintf("%d.%d", l.Major, l.Minor) }

// HasQualname says whether frames are named by co_qualname (3.11+) rather
// than co_name.
func (l Layout) HasQualname() bool { return l.CodeQualname != None }

// layouts is the version table, from each version's headers (offsetof,
// with Py_BUILD_CORE: testdata/python/offsets.inc prints them, and the
// package's tests compare them with every installed interpreter's).
var layouts = map[int]Layout{
	8: {Major: 3, Minor: 8, RuntimeInterpHead: 32, InterpThreadsHead: 8,
		ThreadNext: 8, ThreadID: 176, ThreadFrame: 24, CFrameCurrent: None,
		FramePrevious: 24, FrameCode: 32, FrameInstr: 104, FrameOwner: None, OwnerCStack: None,
		CodeQualname: None, CodeName: 112, CodeFilename: 104, CodeFirstLine: 40, CodeLineTable: 120, CodeAdaptive: None,
		UnicodeLength: 16, UnicodeState: 32, UnicodeASCIIData: 48, UnicodeCompactData: 72,
		BytesSize: 16, BytesData: 32},
	9: {Major: 3, Minor: 9, RuntimeInterpHead: 32, InterpThreadsHead: 8,
		ThreadNext: 8, ThreadID: 176, ThreadFrame: 24, CFrameCurrent: None,
		FramePrevious: 24, FrameCode: 32, FrameInstr: 104, FrameOwner: None, OwnerCStack: None,
		CodeQualname: None, CodeName: 112, CodeFilename: 104, CodeFirstLine: 40, CodeLineTable: 120, CodeAdaptive: None,
		UnicodeLength: 16, UnicodeState: 32, UnicodeASCIIData: 48, UnicodeCompactData: 72,
		BytesSize: 16, BytesData: 32},
	10: {Major: 3, Minor: 10, RuntimeInterpHead: 32, InterpThreadsHead: 8,
		ThreadNext: 8, ThreadID: 176, ThreadFrame: 24, CFrameCurrent: None,
		FramePrevious: 24, FrameCode: 32, FrameInstr: 96, FrameOwner: None, OwnerCStack: None,
		CodeQualname: None, CodeName: 112, CodeFilename: 104, CodeFirstLine: 40, CodeLineTable: 120, CodeAdaptive: None,
		UnicodeLength: 16, UnicodeState: 32, UnicodeASCIIData: 48, UnicodeCompactData: 72,
		BytesSize: 16, BytesData: 32},
	11: {Major: 3, Minor: 11, RuntimeInterpHead: 40, InterpThreadsHead: 16,
		ThreadNext: 8, ThreadID: 152, ThreadFrame: 56, CFrameCurrent: 8,
		FramePrevious: 48, FrameCode: 32, FrameInstr: 56, FrameOwner: 68, OwnerCStack: None,
		CodeQualname: 128, CodeName: 120, CodeFilename: 112, CodeFirstLine: 72, CodeLineTable: 136, CodeAdaptive: 184,
		UnicodeLength: 16, UnicodeState: 32, UnicodeASCIIData: 48, UnicodeCompactData: 72,
		BytesSize: 16, BytesData: 32},
	12: {Major: 3, Minor: 12, RuntimeInterpHead: 40, InterpThreadsHead: 72,
		ThreadNext: 8, ThreadID: 136, ThreadFrame: 56, CFrameCurrent: 0,
		FramePrevious: 8, FrameCode: 0, FrameInstr: 56, FrameOwner: 70, OwnerCStack: 3,
		CodeQualname: 128, CodeName: 120, CodeFilename: 112, CodeFirstLine: 68, CodeLineTable: 136, CodeAdaptive: 192,
		UnicodeLength: 16, UnicodeState: 32, UnicodeASCIIData: 40, UnicodeCompactData: 56,
		BytesSize: 16, BytesData: 32},
	13: {Major: 3, Minor: 13, RuntimeInterpHead: 632, InterpThreadsHead: 7344,
		ThreadNext: 8, ThreadID: 152, ThreadFrame: 72, CFrameCurrent: None,
		FramePrevious: 8, FrameCode: 0, FrameInstr: 56, FrameOwner: 70, OwnerCStack: 3,
		CodeQualname: 128, CodeName: 120, CodeFilename: 112, CodeFirstLine: 68, CodeLineTable: 136, CodeAdaptive: 200,
		UnicodeLength: 16, UnicodeState: 32, UnicodeASCIIData: 40, UnicodeCompactData: 56,
		BytesSize: 16, BytesData: 32},
}

// LayoutFor returns the layout of CPython major.minor; false for a version
// outside the table (3.8-3.13).
func LayoutFor(major, minor int) (Layout, bool) {
	if major != 3 {
		return Layout{}, false
	}
	l, ok := layouts[minor]
	return l, ok
}

// Supported is the range of versions in the table, for messages.
const Supported = "3.8-3.13"
