// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"testing"
	"unsafe"

	tpbpf "github.com/tickprof/tickprof/bpf"
)

// The sampling and off-CPU programs write sample records with the header
// of bpf/sample_types.h: as each object was built, it is the size the
// parser reads (hdrSize).
func TestRecordHeadersAgree(t *testing.T) {
	off, smp := unsafe.Sizeof(tpbpf.OffCPUSampleHdr{}), unsafe.Sizeof(tpbpf.SampleSampleHdr{})
	if off != smp || int(smp) != hdrSize {
		t.Errorf("off-CPU record header %d bytes, sample record header %d, parser %d", off, smp, hdrSize)
	}
}
