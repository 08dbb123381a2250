// SPDX-License-Identifier: Apache-2.0
/* Prints the offsets of the CPython structures tickprof reads, compiled
 * against one interpreter's own headers (internal ones included), as
 * "name value" lines: internal/python's tests compare them with its
 * version table. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#else
#include "frameobject.h"
#include "internal/pycore_pystate.h"
#endif
#if PY_VERSION_HEX >= 0x03090000 && PY_VERSION_HEX < 0x030B0000
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#endif

#define P(name, v) printf("%s %ld\n", name, (long)(v))

int main(void)
{
	P("version", PY_VERSION_HEX >> 16);
	P("runtime.interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX >= 0x030B0000
	P("interp.threads_head", offsetof(PyInterpreterState, threads.head));
#else
	P("interp.threads_head", offsetof(PyInterpreterState, tstate_head));
#endif
	P("tstate.next", offsetof(PyThreadState, next));
	P("tstate.thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030D0000
	P("tstate.frame", offsetof(PyThreadState, current_frame));
	P("cframe.current_frame", -1);
#elif PY_VERSION_HEX >= 0x030B0000
	P("tstate.frame", offsetof(PyThreadState, cframe));
	P("cframe.current_frame", offsetof(_PyCFrame, current_frame));
#else
	P("tstate.frame", offsetof(PyThreadState, frame));
	P("cframe.current_frame", -1);
#endif
#if PY_VERSION_HEX >= 0x030B0000
	P("frame.previous", offsetof(_PyInterpreterFrame, previous));
#if PY_VERSION_HEX >= 0x030D0000
	P("frame.code", offsetof(_PyInterpreterFrame, f_executable));
	P("frame.instr", offsetof(_PyInterpreterFrame, instr_ptr));
#else
	P("frame.code", offsetof(_PyInterpreterFrame, f_code));
	P("frame.instr", offsetof(_PyInterpreterFrame, prev_instr));
#endif
#if PY_VERSION_HEX >= 0x030C0000
	P("frame.owner", offsetof(_PyInterpreterFrame, owner));
	P("owner.cstack", FRAME_OWNED_BY_CSTACK);
#else
	P("frame.owner", offsetof(_PyInterpreterFrame, is_entry));
	P("owner.cstack", -1);
#endif
	P("code.qualname", offsetof(PyCodeObject, co_qualname));
	P("code.code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#else
	P("frame.previous", offsetof(PyFrameObject, f_back));
	P("frame.code", offsetof(PyFrameObject, f_code));
	P("frame.instr", offsetof(PyFrameObject, f_lasti));
	P("frame.owner", -1);
	P("owner.cstack", -1);
	P("code.qualname", -1);
	P("code.code_adaptive", -1);
#endif
	P("code.filename", offsetof(PyCodeObject, co_filename));
	P("code.name", offsetof(PyCodeObject, co_name));
	P("code.firstlineno", offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX >= 0x030A0000
	P("code.linetable", offsetof(PyCodeObject, co_linetable));
#else
	P("code.linetable", offsetof(PyCodeObject, co_lnotab));
#endif
	P("unicode.length", offsetof(PyASCIIObject, length));
	P("unicode.state", offsetof(PyASCIIObject, state));
	P("unicode.ascii_data", sizeof(PyASCIIObject));
	P("unicode.compact_data", sizeof(PyCompactUnicodeObject));
	P("bytes.size", offsetof(PyBytesObject, ob_base.ob_size));
	P("bytes.data", offsetof(PyBytesObject, ob_sval));
	return 0;
}
