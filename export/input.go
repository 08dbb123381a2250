// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/internal/safefile"
	"github.com/tickprof/tickprof/timing"
)

// Size limits of the files the readers accept. A pprof profile of a long
// run with many stacks is a few MiB; a limit far above that refuses only
// what is not a profile (a device, a runaway file) before it fills memory.
const (
	// MaxProfileFile is the largest profile file read (as stored).
	MaxProfileFile = 256 << 20
	// MaxProfileData is the largest a profile may be once decompressed.
	MaxProfileData = 1 << 30
	// MaxJSONFile is the largest JSON document read (time --json, plan
	// --from).
	MaxJSONFile = 64 << 20
)

// ReadProfileFile reads and parses the pprof profile at path (see
// ReadProfile). It refuses what is not a regular file (/dev/zero, a FIFO)
// and files over MaxProfileFile without reading them.
func ReadProfileFile(path string) (*profile.Profile, error) {
	data, err := safefile.ReadFile(path, "profile", MaxProfileFile)
	if err != nil {
		return nil, err
	}
	return ReadProfile(data, path)
}

// ReadTimeJSONFile reads the `tickprof time --json` document at path (see
// ReadTimeJSON), refusing what is not a regular file and files over
// MaxJSONFile.
func ReadTimeJSONFile(path string) (*timing.Result, error) {
	return safefile.ReadParsed(path, "JSON document", MaxJSONFile, ReadTimeJSON)
}

// gunzip decompresses gzipped profile data, at most gunzipBound of its
// size: a few KiB of gzip can stand for gigabytes of zeros.
func gunzip(data []byte, name string) ([]byte, error) {
	return gunzipLimit(data, name, gunzipBound(len(data)))
}

// gunzipBound is how large n bytes of gzipped profile may be once
// decompressed: 64 MiB, or 32 times n for larger files (a pprof profile
// compresses 3 to 10 times), at most MaxProfileData. A 1.1 MB gzip of
// zeros stood for 1 GiB, whose parse took 2.6 GB.
func gunzipBound(n int) int64 {
	return min(MaxProfileData, max(64<<20, 32*int64(n)))
}

func gunzipLimit(data []byte, name string, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s is not a pprof profile: gzip: %v", name, err)
	}
	out, err := io.ReadAll(safefile.LimitedReader(zr, name+" decompressed", limit))
	if errors.Is(err, safefile.ErrTooLarge) {
		return nil, fmt.Errorf("profile %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not a pprof profile: %v", name, err)
	}
	return out, nil
}

// isGzip reports whether data starts with the gzip magic bytes.
func isGzip(data []byte) bool { return len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b }
