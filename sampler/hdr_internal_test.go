// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"testing"
	"unsafe"

	tpbpf "github.com/tickprof/tickprof/bpf"
)

// The off-CPU program writes its sample records with its own copy of the
// sampling program's record header: the two must stay the same size, and
// the size the parser reads (hdrSize).
func TestRecordHeadersAgree(t *testing.T) {
	off, smp := unsafe.Sizeof(tpbpf.OffCPUOffSampleHdr{}), unsafe.Sizeof(tpbpf.SampleSampleHdr{})
	if off != smp || int(smp) != hdrSize {
		t.Errorf("off-CPU record header %d bytes, sample record header %d, parser %d", off, smp, hdrSize)
	}
}
