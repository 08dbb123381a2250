package loader

import (
	"os"
	"reflect"
	"testing"
)

// Addresses a frame-pointer walk read from data map nowhere and are
// reported so; addresses in this test binary carry their file offset.
func TestProcMapsLookup(t *testing.T) {
	p := newProcMaps(os.Getpid())
	p.refresh()
	defer p.close()
	if _, ok := p.lookup(0x2c292a28746e756f); ok {
		t.Error("0x2c292a28746e756f (the text \"ount(*),\") looked up as a frame")
	}
	pc := uint64(reflect.ValueOf(TestProcMapsLookup).Pointer()) + 1
	f, ok := p.lookup(pc)
	if !ok || f.File == "" || f.Func != "github.com/tickprof/tickprof/internal/loader.TestProcMapsLookup" {
		t.Fatalf("lookup of this test's own address: %+v, %v", f, ok)
	}
	if f.Offset >= pc || f.Offset == 0 {
		t.Errorf("offset %#x of %#x is not a file offset", f.Offset, pc)
	}
}
